//! Domain walls and static obstacles sampled on the MAC grid: signed distance at nodes and cell
//! centres, and the open (unblocked) area fraction of every face used by the cut-cell pressure
//! projection.

use crate::geometry::Shape;
use crate::grid::fraction::square_fraction_inside;
use crate::grid::{Array3, Grid, Location};
use crate::math::{Real, Vec3};

/// One side of the domain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Boundary {
    /// A closed, free-slip wall: liquid cannot pass.
    #[default]
    Wall,
    /// Open to empty space at zero pressure: liquid leaves and is removed.
    Open,
}

/// Faces open less than this share of their area are closed. A cell behind such slivers is
/// barely connected to the liquid: its pressure is ill-determined (its row in the pressure
/// matrix is tiny), and the solver's residual, divided by it, put velocities of hundreds of
/// metres a second on the slivers when a body slammed into the water nearby.
pub const OPEN_MIN: Real = 0.01;

/// Static solid geometry on the grid.
#[derive(Clone, Debug)]
pub struct StaticSolids {
    /// What each domain side is, `[axis][side]`.
    pub boundaries: [[Boundary; 2]; 3],
    /// Obstacle signed distance at grid nodes (negative inside; large positive without obstacles).
    pub phi_nodes: Array3<Real>,
    /// Obstacle signed distance at cell centres.
    pub phi_cells: Array3<Real>,
    /// Fraction of each face's area not covered by a solid, per axis: 0 on closed domain walls,
    /// inside obstacles, on every face of a cell whose centre is inside an obstacle, and below
    /// [`OPEN_MIN`]; 1 in open liquid; in between on faces cut by an obstacle surface between
    /// cells whose centres are outside. A cell with its centre inside an obstacle hangs on the
    /// liquid by slivers: its pressure is ill-determined, and faces open a few percent reached
    /// several m/s inside a rock as starfish settled on it (their substeps shrank tenfold).
    pub face_open: [Array3<Real>; 3],
    /// The obstacles as given (for previews and surface output).
    pub obstacles: Vec<(String, Shape)>,
}

impl StaticSolids {
    /// Samples `obstacles` on `grid` and closes the wall sides of the domain.
    pub fn new(grid: &Grid, boundaries: [[Boundary; 2]; 3], obstacles: Vec<(String, Shape)>) -> Self {
        let far = 1e3 * grid.dx * grid.dims.iter().max().copied().unwrap_or(1) as Real;
        // An obstacle is only evaluated within two cells of its bounds; farther out the distance
        // to its bounds stands in (a lower bound: only the sign and the values near surfaces are
        // used, as for bodies), so a large grid around many mesh rocks samples quickly.
        let bounds: Vec<Shape> = obstacles.iter().map(|(_, s)| s.bounds()).map(|(min, max)| Shape::Box { min, max }).collect();
        let distance = |x: Vec3| {
            obstacles.iter().zip(&bounds).fold(far, |d, ((_, shape), bounds)| {
                let outside = bounds.signed_distance(&x);
                d.min(if outside > 2.0 * grid.dx { outside } else { shape.signed_distance(&x) })
            })
        };
        let phi_nodes = grid.sample_fn(Location::Node, distance);
        let phi_cells = grid.sample_fn(Location::Cell, distance);
        let mut face_open = [0, 1, 2].map(|a| {
            let mut open = grid.zeros(Location::Face(a));
            let (u, v) = ((a + 1) % 3, (a + 2) % 3);
            open.par_fill_with(|i, j, k| {
                let idx = [i, j, k];
                if (idx[a] == 0 && boundaries[a][0] == Boundary::Wall) || (idx[a] == grid.dims[a] && boundaries[a][1] == Boundary::Wall) {
                    return 0.0;
                }
                // The face's four corners are nodes; corner (p, q) steps along axes u and v.
                let corner = |p: usize, q: usize| {
                    let mut n = idx;
                    n[u] += p;
                    n[v] += q;
                    phi_nodes.get(n[0], n[1], n[2])
                };
                let open = 1.0 - square_fraction_inside([corner(0, 0), corner(1, 0), corner(0, 1), corner(1, 1)]);
                if open < OPEN_MIN {
                    0.0
                } else {
                    open
                }
            });
            open
        });
        // Cells whose centre is inside an obstacle are solid: their faces are closed.
        let face = |c: [usize; 3], a: usize, side: usize| {
            let mut f = c;
            f[a] += side;
            f
        };
        let solid_cells: Vec<[usize; 3]> = (0..grid.cell_count()).map(|c| phi_cells.coords(c)).filter(|c| phi_cells.get(c[0], c[1], c[2]) < 0.0).collect();
        for c in solid_cells {
            for (a, open) in face_open.iter_mut().enumerate() {
                for side in 0..2 {
                    let f = face(c, a, side);
                    open.set(f[0], f[1], f[2], 0.0);
                }
            }
        }
        StaticSolids { boundaries, phi_nodes, phi_cells, face_open, obstacles }
    }

    /// Whether any obstacle exists.
    pub fn has_obstacles(&self) -> bool {
        !self.obstacles.is_empty()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.phi_nodes.heap_bytes() + self.phi_cells.heap_bytes() + self.face_open.iter().map(Array3::heap_bytes).sum::<usize>()
    }
}
