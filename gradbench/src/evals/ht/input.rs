//! ht's input as the eval sends it (`HTInput`: theta, the hand model and the data, and `us`,
//! empty for the simple variant), its checks, and the arrays the objective runs on, built as
//! the C++ reference's `from_json` builds its matrices: 4×4 transforms row by row, homogeneous
//! base positions per vertex, weights per bone.

use super::super::Input;
use super::model::{Mat4, N_THETA, Vec3};
use serde::Deserialize;

/// The hand model as sent.
#[derive(Deserialize)]
pub struct ModelJson {
    /// The number of bones.
    pub bone_count: usize,
    /// The bones' names (only their number is used).
    pub bone_names: Vec<String>,
    /// Each bone's parent, −1 for a root; a parent comes before its children.
    pub parents: Vec<i64>,
    /// Each bone's 4×4 transform relative to its parent, row by row.
    pub base_relatives: Vec<Vec<Vec<f64>>>,
    /// Each bone's inverse absolute 4×4 transform at rest, row by row.
    pub inverse_base_absolutes: Vec<Vec<Vec<f64>>>,
    /// Each vertex's homogeneous rest position (x, y, z, 1).
    pub base_positions: Vec<Vec<f64>>,
    /// Each vertex's weight per bone.
    pub weights: Vec<Vec<f64>>,
    /// The mesh's triangles, three vertex indices each.
    pub triangles: Vec<Vec<usize>>,
    /// Whether the model is mirrored (x negated).
    pub is_mirrored: bool,
}

/// The data as sent: the model, and per observed point its correspondence (a vertex, or a
/// triangle when `us` is given) and its coordinates.
#[derive(Deserialize)]
pub struct DataJson {
    /// The hand model.
    pub model: ModelJson,
    /// Per point, the index of its vertex (simple) or triangle (complicated).
    pub correspondences: Vec<usize>,
    /// The observed points.
    pub points: Vec<Vec<f64>>,
}

/// The eval's `HTInput`.
#[derive(Deserialize)]
pub struct HtInput {
    /// The pose: global rotation (3), translation (3), finger angles (20).
    pub theta: Vec<f64>,
    /// The model and the observations.
    pub data: DataJson,
    /// Per point, barycentric coordinates (u₀, u₁) in its triangle; empty for the simple
    /// variant.
    pub us: Vec<Vec<f64>>,
}

/// Bones the pose parameters need: 3 columns before them, the fingers' 20 parameters in
/// columns 5..24 (see `to_pose_params`).
const MIN_BONES: usize = 21;

fn lengths<T>(field: &str, items: &[Vec<T>], want: usize) -> Result<(), String> {
    match items.iter().position(|item| item.len() != want) {
        Some(i) => Err(format!(
            "`{field}[{i}]` has {} entries; each must have {want}",
            items[i].len()
        )),
        None => Ok(()),
    }
}

fn count(field: &str, len: usize, want: usize, of: &str) -> Result<(), String> {
    if len == want {
        Ok(())
    } else {
        Err(format!("`{field}` has {len} entries; {of} is {want}"))
    }
}

fn matrices(field: &str, items: &[Vec<Vec<f64>>]) -> Result<(), String> {
    for (b, m) in items.iter().enumerate() {
        lengths(&format!("{field}[{b}]"), std::slice::from_ref(m), 4)?;
        lengths(&format!("{field}[{b}]"), m, 4)?;
    }
    Ok(())
}

fn indices(
    field: &str,
    items: impl IntoIterator<Item = usize>,
    bound: usize,
    of: &str,
) -> Result<(), String> {
    match items.into_iter().enumerate().find(|(_, v)| *v >= bound) {
        Some((i, v)) => Err(format!(
            "`{field}` entry {i} is {v}; there are {bound} {of}"
        )),
        None => Ok(()),
    }
}

impl ModelJson {
    fn check(&self) -> Result<(), String> {
        let bones = self.bone_count;
        if bones < MIN_BONES {
            return Err(format!(
                "`bone_count` is {bones}; the 26 pose parameters need at least {MIN_BONES} bones"
            ));
        }
        count("bone_names", self.bone_names.len(), bones, "`bone_count`")?;
        count("parents", self.parents.len(), bones, "`bone_count`")?;
        count(
            "base_relatives",
            self.base_relatives.len(),
            bones,
            "`bone_count`",
        )?;
        count(
            "inverse_base_absolutes",
            self.inverse_base_absolutes.len(),
            bones,
            "`bone_count`",
        )?;
        if let Some((b, &p)) = self
            .parents
            .iter()
            .enumerate()
            .find(|&(b, &p)| p != -1 && !(0..b as i64).contains(&p))
        {
            return Err(format!(
                "`parents[{b}]` is {p}; a parent is −1 or a bone before {b}"
            ));
        }
        matrices("base_relatives", &self.base_relatives)?;
        matrices("inverse_base_absolutes", &self.inverse_base_absolutes)?;
        lengths("base_positions", &self.base_positions, 4)?;
        let verts = self.base_positions.len();
        count(
            "weights",
            self.weights.len(),
            verts,
            "the number of `base_positions`",
        )?;
        lengths("weights", &self.weights, bones)?;
        lengths("triangles", &self.triangles, 3)?;
        indices(
            "triangles",
            self.triangles.iter().flatten().copied(),
            verts,
            "vertices",
        )
    }
}

impl Input for HtInput {
    fn check(&self) -> Result<(), String> {
        count(
            "theta",
            self.theta.len(),
            N_THETA,
            "the number of pose parameters",
        )?;
        let model = &self.data.model;
        model.check()?;
        let points = self.data.points.len();
        count(
            "data.correspondences",
            self.data.correspondences.len(),
            points,
            "the number of `data.points`",
        )?;
        lengths("data.points", &self.data.points, 3)?;
        let corr = self.data.correspondences.iter().copied();
        if self.us.is_empty() {
            indices(
                "data.correspondences",
                corr,
                model.base_positions.len(),
                "vertices",
            )
        } else {
            count("us", self.us.len(), points, "the number of `data.points`")?;
            lengths("us", &self.us, 2)?;
            indices(
                "data.correspondences",
                corr,
                model.triangles.len(),
                "triangles",
            )
        }
    }
}

/// The hand model, as the objective reads it.
#[derive(Clone)]
pub struct Model {
    /// Each bone's parent (`None` for a root), before the bone.
    pub parents: Vec<Option<usize>>,
    /// Each bone's transform relative to its parent.
    pub base_relatives: Vec<Mat4>,
    /// Each bone's inverse absolute transform at rest.
    pub inverse_base_absolutes: Vec<Mat4>,
    /// Each vertex's homogeneous rest position.
    pub base_positions: Vec<[f64; 4]>,
    /// `weights[bone][vertex]`.
    pub weights: Vec<Vec<f64>>,
    /// The mesh's triangles.
    pub triangles: Vec<[usize; 3]>,
    /// Whether x is negated after skinning.
    pub is_mirrored: bool,
}

/// The model and the observations.
#[derive(Clone)]
pub struct Data {
    /// The hand model.
    pub model: Model,
    /// Per point, its vertex (simple) or triangle (complicated).
    pub correspondences: Vec<usize>,
    /// The observed points.
    pub points: Vec<Vec3>,
}

/// Everything the objective and its Jacobian run on.
#[derive(Clone)]
pub struct Problem {
    /// The pose parameters.
    pub theta: Vec<f64>,
    /// Per point, its barycentric coordinates; empty for the simple variant.
    pub us: Vec<[f64; 2]>,
    /// The model and the observations.
    pub data: Data,
}

fn mat4(rows: &[Vec<f64>]) -> Mat4 {
    std::array::from_fn(|i| std::array::from_fn(|j| rows[i][j]))
}

fn array<const N: usize>(v: &[f64]) -> [f64; N] {
    std::array::from_fn(|i| v[i])
}

impl Problem {
    /// The arrays of a checked input.
    ///
    /// # Panics
    /// If `input` did not pass [`Input::check`].
    pub fn new(input: HtInput) -> Problem {
        let m = input.data.model;
        let bones = m.bone_count;
        let model = Model {
            parents: m.parents.iter().map(|&p| usize::try_from(p).ok()).collect(),
            base_relatives: m.base_relatives.iter().map(|r| mat4(r)).collect(),
            inverse_base_absolutes: m.inverse_base_absolutes.iter().map(|r| mat4(r)).collect(),
            base_positions: m.base_positions.iter().map(|p| array(p)).collect(),
            weights: (0..bones)
                .map(|b| m.weights.iter().map(|w| w[b]).collect())
                .collect(),
            triangles: m.triangles.iter().map(|t| [t[0], t[1], t[2]]).collect(),
            is_mirrored: m.is_mirrored,
        };
        Problem {
            theta: input.theta,
            us: input.us.iter().map(|u| array(u)).collect(),
            data: Data {
                model,
                correspondences: input.data.correspondences,
                points: input.data.points.iter().map(|p| array(p)).collect(),
            },
        }
    }
}
