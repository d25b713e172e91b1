//! Which ranks have reached which collective: what lets a timeout name the rank that is
//! dead or hung, which a collective's request alone cannot tell.
//!
//! Before its `k`-th collective (from 0), each rank sends `k + 1` (the number of collectives
//! it has entered) to every other rank, a non-blocking 8-byte message on a communicator of
//! its own; each rank keeps one receive posted per peer and reads them while it waits. When
//! a collective times out, the peers whose count is still `≤ k` never reached it. The
//! messages are MPI's own point-to-point sends: no protocol of ours beyond a counter.

use super::super::DistError;
use super::raw::{self, lock};
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use std::ffi::{c_int, c_void};
use std::mem::ManuallyDrop;

/// The tag of the arrival messages (they have their communicator to themselves).
const TAG: c_int = 7;

/// A posted receive or send of one count, with its buffer (boxed: MPI holds its address).
struct Message {
    request: ffi::MPI_Request,
    value: Box<u64>,
}

/// The arrival counts of the peers, and this rank's messages in flight.
pub(super) struct Arrivals {
    comm: ManuallyDrop<SimpleCommunicator>,
    rank: usize,
    /// For each rank, the most collectives it has said it entered (this rank's own: unused).
    seen: Vec<u64>,
    /// One posted receive per peer (`None` for this rank).
    inbox: Vec<Option<Message>>,
    /// Sends not yet known to be complete.
    outbox: Vec<Message>,
}

impl Arrivals {
    /// Arrival tracking on `comm` (a communicator of its own), with a receive posted from
    /// every peer.
    pub fn new(comm: SimpleCommunicator, rank: usize, size: usize) -> Result<Self, DistError> {
        raw::errors_return(comm.as_raw())?;
        let mut arrivals = Arrivals {
            comm: ManuallyDrop::new(comm),
            rank,
            seen: vec![0; size],
            inbox: (0..size).map(|_| None).collect(),
            outbox: Vec::new(),
        };
        for peer in (0..size).filter(|&p| p != rank) {
            arrivals.inbox[peer] = Some(arrivals.post_receive(peer)?);
        }
        Ok(arrivals)
    }

    fn post_receive(&self, peer: usize) -> Result<Message, DistError> {
        let mut value = Box::new(0u64);
        let mut request = raw::null_request();
        let _guard = lock();
        // SAFETY: `value` is a boxed u64 kept with the request until it completes or is
        // cancelled; `peer` is a rank of `comm`.
        let code = unsafe {
            ffi::MPI_Irecv(
                (&mut *value as *mut u64).cast::<c_void>(),
                1,
                ffi::RSMPI_UINT64_T,
                peer as c_int,
                TAG,
                self.comm.as_raw(),
                &mut request,
            )
        };
        raw::check("MPI_Irecv", code)?;
        Ok(Message { request, value })
    }

    /// Tells every peer that this rank enters its collective number `seq` (from 0).
    pub fn announce(&mut self, seq: u64) -> Result<(), DistError> {
        self.reap_sends()?;
        for peer in (0..self.seen.len()).filter(|&p| p != self.rank) {
            let value = Box::new(seq + 1);
            let mut request = raw::null_request();
            let _guard = lock();
            // SAFETY: `value` is boxed and kept in `outbox` until the send completes (or is
            // leaked at drop); `peer` is a rank of `comm`.
            let code = unsafe {
                ffi::MPI_Isend(
                    (&*value as *const u64).cast::<c_void>(),
                    1,
                    ffi::RSMPI_UINT64_T,
                    peer as c_int,
                    TAG,
                    self.comm.as_raw(),
                    &mut request,
                )
            };
            raw::check("MPI_Isend", code)?;
            self.outbox.push(Message { request, value });
        }
        Ok(())
    }

    /// Reads every arrival message that has come in.
    pub fn poll(&mut self) -> Result<(), DistError> {
        for peer in 0..self.inbox.len() {
            while let Some(mut message) = self.inbox[peer].take() {
                if !raw::test("MPI_Test", &mut message.request)? {
                    self.inbox[peer] = Some(message);
                    break;
                }
                self.seen[peer] = self.seen[peer].max(*message.value);
                self.inbox[peer] = Some(self.post_receive(peer)?);
            }
        }
        Ok(())
    }

    /// The peers that have not announced collective number `seq`.
    pub fn missing(&mut self, seq: u64) -> Result<Vec<usize>, DistError> {
        self.poll()?;
        Ok((0..self.seen.len())
            .filter(|&p| p != self.rank && self.seen[p] <= seq)
            .collect())
    }

    /// Forgets the sends that have completed.
    fn reap_sends(&mut self) -> Result<(), DistError> {
        let mut kept = Vec::with_capacity(self.outbox.len());
        for mut message in std::mem::take(&mut self.outbox) {
            if !raw::test("MPI_Test", &mut message.request)? {
                kept.push(message);
            }
        }
        self.outbox = kept;
        Ok(())
    }
}

impl Drop for Arrivals {
    /// Cancels the posted receives; sends still in flight (to a peer that stopped reading)
    /// keep their buffers, leaked, since MPI may still read them.
    fn drop(&mut self) {
        for mut message in self.inbox.drain(..).flatten() {
            let _guard = lock();
            // SAFETY: a posted receive of this process; cancelling then waiting completes
            // it either way (cancelled or matched), after which its buffer may be freed.
            unsafe {
                ffi::MPI_Cancel(&mut message.request);
                ffi::MPI_Wait(&mut message.request, ffi::RSMPI_STATUS_IGNORE);
            }
        }
        let _ = self.reap_sends();
        for message in self.outbox.drain(..) {
            std::mem::forget(message.value);
        }
        let _guard = lock();
        // SAFETY: dropped once, here, under the MPI lock (`MPI_Comm_free`), never used after.
        unsafe { ManuallyDrop::drop(&mut self.comm) };
    }
}
