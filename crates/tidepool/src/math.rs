//! Scalar and small vector types used throughout the engine.

/// The floating-point type of all simulation state.
pub type Real = f64;

/// A 3-vector (positions, velocities, normals). SI units, y up.
pub type Vec3 = nalgebra::Vector3<Real>;

/// A 3x3 matrix (inertia tensors, rotations).
pub type Mat3 = nalgebra::Matrix3<Real>;

/// A unit quaternion (body orientations).
pub type Quat = nalgebra::UnitQuaternion<Real>;

/// Converts a scene-file triple into a [`Vec3`].
pub fn vec3(a: [Real; 3]) -> Vec3 {
    Vec3::new(a[0], a[1], a[2])
}

/// A small, fast, splittable pseudo-random generator (SplitMix64). Streams are derived from a
/// key (seed, step, cell) so that parallel code draws the same numbers for any thread count.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A stream for the given key.
    pub fn keyed(key: &[u64]) -> Self {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for &k in key {
            state = SplitMix64(state ^ k).next_u64();
        }
        SplitMix64(state)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_unit(&mut self) -> Real {
        (self.next_u64() >> 11) as Real / (1u64 << 53) as Real
    }
}

/// Disjoint sets of `0..n` (union–find with path halving): classes of things joined pairwise.
pub struct DisjointSets(Vec<usize>);

impl DisjointSets {
    /// `n` sets of one each.
    pub fn new(n: usize) -> Self {
        DisjointSets((0..n).collect())
    }

    /// The representative of `i`'s set.
    pub fn root(&mut self, mut i: usize) -> usize {
        let parent = &mut self.0;
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }

    /// Joins the sets of `a` and `b`; the smaller representative stays.
    pub fn join(&mut self, a: usize, b: usize) {
        let (a, b) = (self.root(a), self.root(b));
        self.0[a.max(b)] = a.min(b);
    }
}
