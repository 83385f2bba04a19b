//! Dense 3D arrays in x-fastest order.

use rayon::prelude::*;

/// A dense 3D array with `x` varying fastest: element `(i, j, k)` is at `i + nx (j + ny k)`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Array3<T> {
    dims: [usize; 3],
    data: Vec<T>,
}

impl<T: Copy + Send + Sync> Array3<T> {
    /// An array of `dims` with every element `value`.
    pub fn filled(dims: [usize; 3], value: T) -> Self {
        Array3 { dims, data: vec![value; dims[0] * dims[1] * dims[2]] }
    }

    /// Wraps existing data (its length must be the product of `dims`).
    pub fn from_vec(dims: [usize; 3], data: Vec<T>) -> Self {
        assert_eq!(data.len(), dims[0] * dims[1] * dims[2], "Array3::from_vec: length mismatch");
        Array3 { dims, data }
    }

    /// `[nx, ny, nz]`.
    pub fn dims(&self) -> [usize; 3] {
        self.dims
    }

    /// Takes `other`'s values (a checkpoint's); refused unless it has this array's size.
    pub fn restore_from(&mut self, other: Array3<T>) -> Result<(), String> {
        if other.dims != self.dims || other.data.len() != self.data.len() {
            return Err(format!("an array of {:?} values where the scene's grid needs {:?}", other.dims, self.dims));
        }
        *self = other;
        Ok(())
    }

    /// Linear index of `(i, j, k)`.
    #[inline]
    pub fn index(&self, i: usize, j: usize, k: usize) -> usize {
        debug_assert!(i < self.dims[0] && j < self.dims[1] && k < self.dims[2]);
        i + self.dims[0] * (j + self.dims[1] * k)
    }

    /// `(i, j, k)` of a linear index.
    #[inline]
    pub fn coords(&self, c: usize) -> [usize; 3] {
        [c % self.dims[0], (c / self.dims[0]) % self.dims[1], c / (self.dims[0] * self.dims[1])]
    }

    /// Element `(i, j, k)`.
    #[inline]
    pub fn get(&self, i: usize, j: usize, k: usize) -> T {
        self.data[self.index(i, j, k)]
    }

    /// Sets element `(i, j, k)`.
    #[inline]
    pub fn set(&mut self, i: usize, j: usize, k: usize, value: T) {
        let c = self.index(i, j, k);
        self.data[c] = value;
    }

    /// Element at `(i, j, k) + offset` if inside the array.
    #[inline]
    pub fn get_offset(&self, i: usize, j: usize, k: usize, offset: [isize; 3]) -> Option<T> {
        let p = [i as isize + offset[0], j as isize + offset[1], k as isize + offset[2]];
        if (0..3).all(|a| p[a] >= 0 && (p[a] as usize) < self.dims[a]) {
            Some(self.get(p[0] as usize, p[1] as usize, p[2] as usize))
        } else {
            None
        }
    }

    /// The elements in index order.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// The elements in index order, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// Fills every element with `f(i, j, k)`, in parallel over z-slabs.
    pub fn par_fill_with<F>(&mut self, f: F)
    where
        F: Fn(usize, usize, usize) -> T + Sync,
    {
        let [nx, ny, _] = self.dims;
        self.data.par_chunks_mut((nx * ny).max(1)).enumerate().for_each(|(k, slab)| {
            for j in 0..ny {
                for i in 0..nx {
                    slab[i + nx * j] = f(i, j, k);
                }
            }
        });
    }

    /// Updates every element in place with `f(i, j, k, &mut value)`, in parallel over z-slabs.
    pub fn par_update<F>(&mut self, f: F)
    where
        F: Fn(usize, usize, usize, &mut T) + Sync,
    {
        let [nx, ny, _] = self.dims;
        self.data.par_chunks_mut((nx * ny).max(1)).enumerate().for_each(|(k, slab)| {
            for j in 0..ny {
                for i in 0..nx {
                    f(i, j, k, &mut slab[i + nx * j]);
                }
            }
        });
    }

    /// A new array of `f(i, j, k, value)`, computed in parallel.
    pub fn par_map<U, F>(&self, f: F) -> Array3<U>
    where
        U: Copy + Send + Sync + Default,
        F: Fn(usize, usize, usize, T) -> U + Sync,
    {
        let mut out = Array3::filled(self.dims, U::default());
        out.par_fill_with(|i, j, k| f(i, j, k, self.get(i, j, k)));
        out
    }

    /// Heap bytes held by the array.
    pub fn heap_bytes(&self) -> usize {
        self.data.capacity() * std::mem::size_of::<T>()
    }
}

/// The six axis-aligned neighbour offsets.
pub const NEIGHBOURS: [[isize; 3]; 6] = [[-1, 0, 0], [1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1]];
