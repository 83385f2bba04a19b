//! Initial fields of a surface flow: the terrain's elevation at the lattice's nodes
//! (procedural, or a 16-bit grayscale PNG height map) and the initial water (uniform, a
//! Gaussian blob, or painted from a grayscale PNG mask). Node `(i, j)` is at
//! `(i * spacing, j * spacing)` in the x–z plane, index `i + nx j`.

use crate::math::{Real, SplitMix64};
use std::path::Path;

/// A terrain's elevation as a function of the position in the lattice's plane.
#[derive(Clone, Debug, PartialEq)]
pub enum Terrain {
    /// Level at elevation 0.
    Flat,
    /// A Gaussian hill `height exp(-r² / (2 width²))` around `centre`.
    Gaussian { centre: [Real; 2], height: Real, width: Real },
    /// A Mexican hat (a Ricker wavelet): `height (1 - r²/width²) exp(-r² / (2 width²))` — a
    /// peak ringed by a circular valley.
    MexicanHat { centre: [Real; 2], height: Real, width: Real },
    /// Smooth value noise: random elevations in `[0, amplitude]` on a square grid of cell
    /// `scale`, interpolated with smoothstep weights; the same `seed` gives the same terrain.
    Noise { amplitude: Real, scale: Real, seed: u64 },
}

impl Terrain {
    /// Elevation at `(x, z)`.
    pub fn elevation(&self, x: Real, z: Real) -> Real {
        match self {
            Terrain::Flat => 0.0,
            Terrain::Gaussian { centre, height, width } => {
                let r2 = (x - centre[0]).powi(2) + (z - centre[1]).powi(2);
                height * (-r2 / (2.0 * width * width)).exp()
            }
            Terrain::MexicanHat { centre, height, width } => {
                let q = ((x - centre[0]).powi(2) + (z - centre[1]).powi(2)) / (width * width);
                height * (1.0 - q) * (-0.5 * q).exp()
            }
            Terrain::Noise { amplitude, scale, seed } => {
                let (u, v) = (x / scale, z / scale);
                let (i, j) = (u.floor(), v.floor());
                let corner = |a: Real, b: Real| SplitMix64::keyed(&[*seed, a as i64 as u64, b as i64 as u64]).next_unit();
                let smooth = |t: Real| t * t * (3.0 - 2.0 * t);
                let (s, t) = (smooth(u - i), smooth(v - j));
                let bottom = corner(i, j) * (1.0 - s) + corner(i + 1.0, j) * s;
                let top = corner(i, j + 1.0) * (1.0 - s) + corner(i + 1.0, j + 1.0) * s;
                amplitude * (bottom * (1.0 - t) + top * t)
            }
        }
    }

    /// Elevations at the nodes of a `dims` lattice with `spacing`.
    pub fn sample(&self, dims: [usize; 2], spacing: Real) -> Vec<Real> {
        (0..dims[0] * dims[1]).map(|c| self.elevation((c % dims[0]) as Real * spacing, (c / dims[0]) as Real * spacing)).collect()
    }
}

/// The most pixels a height map may have (a 16 384 x 16 384 image).
pub const MAX_PIXELS: u64 = 1 << 28;

/// A grayscale PNG read as values in `[0, 1]` (0 black, 1 white), one per pixel, rows from
/// the top of the image along increasing `j`: returns the image's `[width, height]` and the
/// values. 16-bit images keep their 65 536 levels; 8-bit ones are accepted as well. The error
/// says what is wrong, without the path.
pub fn read_grayscale_png(path: &Path) -> Result<([usize; 2], Vec<Real>), String> {
    let file = crate::input::read_limited(path, crate::input::DATA_LIMIT)?;
    let mut decoder = png::Decoder::new(std::io::Cursor::new(file));
    decoder.set_transformations(png::Transformations::IDENTITY);
    let mut reader = decoder.read_info().map_err(|e| format!("not a readable PNG image: {e}"))?;
    let (width, height) = (reader.info().width as u64, reader.info().height as u64);
    if width * height > MAX_PIXELS {
        return Err(format!("the image is {width} x {height} pixels, more than the {MAX_PIXELS} a height map may have"));
    }
    let mut bytes = vec![0; reader.output_buffer_size().ok_or("the image is too large")?];
    let frame = reader.next_frame(&mut bytes).map_err(|e| format!("cannot decode the PNG image: {e}"))?;
    if frame.color_type != png::ColorType::Grayscale {
        return Err(format!("expected a grayscale image (a height map), got {:?}", frame.color_type));
    }
    let dims = [frame.width as usize, frame.height as usize];
    let values = match frame.bit_depth {
        png::BitDepth::Sixteen => bytes[..frame.buffer_size()].chunks_exact(2).map(|b| u16::from_be_bytes([b[0], b[1]]) as Real / 65535.0).collect(),
        png::BitDepth::Eight => bytes[..frame.buffer_size()].iter().map(|&b| b as Real / 255.0).collect(),
        depth => return Err(format!("expected 8 or 16 bits per pixel, got {depth:?}")),
    };
    if dims[0] < 2 || dims[1] < 2 {
        return Err(format!("expected at least 2 x 2 pixels, got {} x {}", dims[0], dims[1]));
    }
    Ok((dims, values))
}

/// The initial water, in particles per node.
#[derive(Clone, Debug, PartialEq)]
pub enum InitialWater {
    /// No water.
    Dry,
    /// The same count on every node.
    Uniform { particles: u32 },
    /// `peak exp(-r² / (2 width²))` particles (rounded down) around `centre`.
    Gaussian { centre: [Real; 2], peak: Real, width: Real },
    /// A grayscale mask of the lattice's size: `peak` times the pixel's value (rounded down).
    Mask { values: Vec<Real>, peak: Real },
}

impl InitialWater {
    /// Particle counters for a `dims` lattice with `spacing`.
    pub fn counters(&self, dims: [usize; 2], spacing: Real) -> Vec<u32> {
        let n = dims[0] * dims[1];
        let at = |c: usize| ((c % dims[0]) as Real * spacing, (c / dims[0]) as Real * spacing);
        match self {
            InitialWater::Dry => vec![0; n],
            InitialWater::Uniform { particles } => vec![*particles; n],
            InitialWater::Gaussian { centre, peak, width } => (0..n)
                .map(|c| {
                    let (x, z) = at(c);
                    let r2 = (x - centre[0]).powi(2) + (z - centre[1]).powi(2);
                    (peak * (-r2 / (2.0 * width * width)).exp()) as u32
                })
                .collect(),
            InitialWater::Mask { values, peak } => values.iter().map(|v| (peak * v.clamp(0.0, 1.0)) as u32).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn procedural_terrains_match_their_formulas() {
        let hat = Terrain::MexicanHat { centre: [5.0, 5.0], height: 2.0, width: 2.0 };
        assert_eq!(hat.elevation(5.0, 5.0), 2.0);
        assert!(hat.elevation(7.0, 5.0).abs() < 1e-15, "zero crossing at r = width");
        let ring = 2.0 * (3.0 as Real).sqrt();
        let valley = hat.elevation(5.0 + ring, 5.0);
        assert!(valley < 0.0 && valley < hat.elevation(5.0 + ring + 0.1, 5.0) && valley < hat.elevation(5.0 + ring - 0.1, 5.0), "the valley's bottom lies at r = sqrt(3) width");
        let hill = Terrain::Gaussian { centre: [1.0, 2.0], height: 3.0, width: 0.5 };
        assert!((hill.elevation(1.5, 2.0) - 3.0 * (-0.5 as Real).exp()).abs() < 1e-15);
        let noise = Terrain::Noise { amplitude: 0.4, scale: 3.0, seed: 7 };
        let heights = noise.sample([30, 30], 0.5);
        assert!(heights.iter().all(|h| (0.0..=0.4).contains(h)));
        assert_eq!(heights, noise.sample([30, 30], 0.5), "the same seed gives the same terrain");
        assert_ne!(heights, Terrain::Noise { amplitude: 0.4, scale: 3.0, seed: 8 }.sample([30, 30], 0.5));
        // Continuous: neighbouring nodes a small step apart differ little.
        assert!((noise.elevation(4.5, 3.0) - noise.elevation(4.5 + 1e-6, 3.0)).abs() < 1e-5);
    }

    /// A 16-bit height map written with the png crate reads back exactly; an RGB image and a
    /// missing file are refused with a reason.
    #[test]
    fn height_maps_read_back_exactly() {
        let dir = std::env::temp_dir().join(format!("tidepool-heightmap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, color: png::ColorType, depth: png::BitDepth, data: &[u8], width: u32, height: u32| {
            let path = dir.join(name);
            let mut encoder = png::Encoder::new(std::io::BufWriter::new(std::fs::File::create(&path).unwrap()), width, height);
            encoder.set_color(color);
            encoder.set_depth(depth);
            encoder.write_header().unwrap().write_image_data(data).unwrap();
            path
        };
        let levels: Vec<u16> = (0..12).map(|k| (k * 5957) as u16).collect();
        let bytes: Vec<u8> = levels.iter().flat_map(|v| v.to_be_bytes()).collect();
        let path = write("map16.png", png::ColorType::Grayscale, png::BitDepth::Sixteen, &bytes, 4, 3);
        let (dims, values) = read_grayscale_png(&path).unwrap();
        assert_eq!(dims, [4, 3]);
        for (v, level) in values.iter().zip(&levels) {
            assert_eq!(*v, *level as Real / 65535.0);
        }
        let rgb = write("rgb.png", png::ColorType::Rgb, png::BitDepth::Eight, &[0; 3 * 4], 2, 2);
        assert!(read_grayscale_png(&rgb).unwrap_err().contains("grayscale"));
        assert!(read_grayscale_png(&dir.join("missing.png")).unwrap_err().contains("cannot open"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn initial_water_counts_particles() {
        assert_eq!(InitialWater::Uniform { particles: 3 }.counters([4, 2], 1.0), vec![3; 8]);
        let blob = InitialWater::Gaussian { centre: [2.0, 2.0], peak: 100.0, width: 1.0 }.counters([5, 5], 1.0);
        assert_eq!(blob[2 + 5 * 2], 100);
        assert_eq!(blob[3 + 5 * 2], (100.0 * (-0.5 as Real).exp()) as u32);
        let mask = InitialWater::Mask { values: vec![0.0, 0.5, 1.0, 2.0], peak: 10.0 }.counters([2, 2], 1.0);
        assert_eq!(mask, vec![0, 5, 10, 10]);
    }
}
