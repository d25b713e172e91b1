//! ba's input as the eval sends it (one camera, one point, one weight and one feature, with the
//! counts n, m, p) and its expansion into the full problem, as the C++ reference's `from_json`
//! builds it: n copies of the camera, m of the point, p of the weight and the feature, and
//! observation i seeing point i mod m from camera i mod n.

use super::super::Input;
use super::model::{CAM_PARAMS, Camera, Vec2, Vec3};
use serde::Deserialize;

/// The eval's `BAInput`, as sent.
#[derive(Deserialize)]
pub struct Compact {
    /// The number of cameras.
    pub n: usize,
    /// The number of points.
    pub m: usize,
    /// The number of observations.
    pub p: usize,
    /// One camera's 11 parameters.
    pub cam: Vec<f64>,
    /// One point's 3 coordinates.
    pub x: Vec<f64>,
    /// One weight.
    pub w: f64,
    /// One feature's 2 coordinates.
    pub feat: Vec<f64>,
}

/// `len` if it is `want`, else an error naming `field`.
fn sized(field: &str, len: usize, want: usize, what: &str) -> Result<(), String> {
    if len == want {
        Ok(())
    } else {
        Err(format!("`{field}` has {len} numbers; {what} has {want}"))
    }
}

impl Input for Compact {
    fn check(&self) -> Result<(), String> {
        sized("cam", self.cam.len(), CAM_PARAMS, "a camera")?;
        sized("x", self.x.len(), 3, "a point")?;
        sized("feat", self.feat.len(), 2, "a feature")?;
        for (field, count) in [("n", self.n), ("m", self.m), ("p", self.p)] {
            if count == 0 {
                return Err(format!(
                    "`{field}` is 0; cameras (n), points (m) and observations (p) must be at least 1"
                ));
            }
        }
        Ok(())
    }
}

/// The full problem: every camera, point, weight and feature, and the observations.
pub struct Problem {
    /// The number of cameras.
    pub n: usize,
    /// The number of points.
    pub m: usize,
    /// Camera parameters, one array per camera.
    pub cams: Vec<Camera>,
    /// Points.
    pub xs: Vec<Vec3>,
    /// One weight per observation.
    pub ws: Vec<f64>,
    /// One feature per observation.
    pub feats: Vec<Vec2>,
    /// Observation i: (camera index, point index).
    pub obs: Vec<[usize; 2]>,
}

impl Problem {
    /// The problem `compact` stands for; `compact` passed [`Input::check`].
    ///
    /// # Panics
    /// If `compact`'s vectors have the wrong lengths (call `check` first).
    pub fn expand(compact: &Compact) -> Problem {
        let cam: [f64; CAM_PARAMS] = compact.cam[..]
            .try_into()
            .expect("ba input not checked: `cam` must have 11 numbers");
        let x: [f64; 3] = compact.x[..]
            .try_into()
            .expect("ba input not checked: `x` must have 3 numbers");
        let feat: [f64; 2] = compact.feat[..]
            .try_into()
            .expect("ba input not checked: `feat` must have 2 numbers");
        let p = compact.p;
        Problem {
            n: compact.n,
            m: compact.m,
            cams: vec![Camera::from_params(&cam); compact.n],
            xs: vec![(x[0], x[1], x[2]); compact.m],
            ws: vec![compact.w; p],
            feats: vec![(feat[0], feat[1]); p],
            obs: (0..p).map(|i| [i % compact.n, i % compact.m]).collect(),
        }
    }

    /// The number of observations.
    pub fn p(&self) -> usize {
        self.obs.len()
    }
}
