//! HDD geometry: zones, cylinders, heads, tracks, track skew, and where a byte address lies on
//! the platters (cylinder, head, angle).
//!
//! Zoned recording (libprefetch paper s3.4, Figure 4): outer tracks hold more bytes, so the
//! outer zones read faster. Zone `z` of `n` holds tracks of `outer + (inner - outer) * z / (n-1)`
//! bytes (rounded to 512-byte sectors); every zone has the same number of cylinders; byte
//! addresses fill a track, then the next head of the cylinder, then the next cylinder, from the
//! outer edge inwards.
//!
//! Track skew: the first byte of each track is rotated by the time the drive needs to switch to
//! it (head switch within a cylinder, a one-cylinder seek across cylinders), so a long
//! sequential read crosses a track boundary without losing a revolution.
//! Deviations: equal cylinder counts per zone and linear track sizes are an interpretation (the
//! papers give no zone tables); no spare sectors or defect remapping.

/// Bytes per sector; track sizes are whole sectors.
pub const SECTOR: u64 = 512;

/// Where a byte lies on the platters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Location {
    /// Cylinder (0 = outer edge).
    pub cyl: u64,
    /// Head (surface) within the cylinder.
    pub head: u64,
    /// Angle of the byte, as a fraction of a revolution in [0, 1).
    pub angle: f64,
    /// Bytes per track at this location.
    pub track_bytes: u64,
    /// Address one past the last byte of this track.
    pub track_end: u64,
}

#[derive(Clone, Debug)]
struct Zone {
    first_byte: u64,
    first_cyl: u64,
    track_bytes: u64,
}

/// The layout of bytes on a zoned disk.
#[derive(Clone, Debug)]
pub struct Geometry {
    zones: Vec<Zone>,
    heads: u64,
    cyls_per_zone: u64,
    head_skew: f64,
    cyl_skew: f64,
}

/// What a [`Geometry`] is built from.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// Bytes the disk must hold at least.
    pub capacity: u64,
    /// Recording surfaces (heads), at least 1.
    pub heads: u64,
    /// Number of zones, at least 1.
    pub zones: u64,
    /// Bytes per track in the outermost zone.
    pub outer_track_bytes: u64,
    /// Bytes per track in the innermost zone.
    pub inner_track_bytes: u64,
    /// Skew between heads of a cylinder, fraction of a revolution.
    pub head_skew: f64,
    /// Skew between the last track of a cylinder and the first of the next, fraction of a
    /// revolution.
    pub cyl_skew: f64,
}

impl Geometry {
    /// Lays out zones and cylinders so the disk holds at least `layout.capacity` bytes.
    /// Callers validate the layout (positive counts and sizes).
    pub fn new(layout: &Layout) -> Self {
        let n = layout.zones.max(1);
        let heads = layout.heads.max(1);
        let track_sizes: Vec<u64> = (0..n)
            .map(|z| zone_track_bytes(layout.outer_track_bytes, layout.inner_track_bytes, z, n))
            .collect();
        let bytes_per_zone_cyl: u64 = track_sizes.iter().sum::<u64>() * heads;
        let cyls_per_zone = layout.capacity.div_ceil(bytes_per_zone_cyl).max(1);
        let mut zones = Vec::with_capacity(n as usize);
        let mut first_byte = 0;
        for (z, &track_bytes) in track_sizes.iter().enumerate() {
            zones.push(Zone {
                first_byte,
                first_cyl: z as u64 * cyls_per_zone,
                track_bytes,
            });
            first_byte += cyls_per_zone * heads * track_bytes;
        }
        Geometry {
            zones,
            heads,
            cyls_per_zone,
            head_skew: layout.head_skew,
            cyl_skew: layout.cyl_skew,
        }
    }

    /// Total bytes laid out (at least the requested capacity).
    pub fn capacity(&self) -> u64 {
        let last = self.zones.last().expect("at least one zone");
        last.first_byte + self.cyls_per_zone * self.heads * last.track_bytes
    }

    /// Number of cylinders.
    pub fn cylinders(&self) -> u64 {
        self.cyls_per_zone * self.zones.len() as u64
    }

    /// Number of heads.
    pub fn heads(&self) -> u64 {
        self.heads
    }

    /// Number of zones.
    pub fn zones(&self) -> usize {
        self.zones.len()
    }

    /// Cylinders in each zone.
    pub fn cylinders_per_zone(&self) -> u64 {
        self.cyls_per_zone
    }

    /// Bytes per track of zone `zone` (0 = outer).
    pub fn zone_track_bytes(&self, zone: usize) -> u64 {
        self.zones[zone.min(self.zones.len() - 1)].track_bytes
    }

    /// Location of byte `addr` (clamped to the last byte).
    pub fn locate(&self, addr: u64) -> Location {
        let addr = addr.min(self.capacity() - 1);
        let zone_index = self.zones.partition_point(|z| z.first_byte <= addr) - 1;
        let zone = &self.zones[zone_index];
        let rel = addr - zone.first_byte;
        let track_in_zone = rel / zone.track_bytes;
        let offset = rel % zone.track_bytes;
        let cyl = zone.first_cyl + track_in_zone / self.heads;
        let head = track_in_zone % self.heads;
        let angle = self.track_start_angle(cyl, head) + offset as f64 / zone.track_bytes as f64;
        Location {
            cyl,
            head,
            angle: angle.fract(),
            track_bytes: zone.track_bytes,
            track_end: addr - offset + zone.track_bytes,
        }
    }

    /// Angle (fraction of a revolution) of the first byte of track (`cyl`, `head`).
    fn track_start_angle(&self, cyl: u64, head: u64) -> f64 {
        let per_cyl = self.cyl_skew + (self.heads - 1) as f64 * self.head_skew;
        (cyl as f64 * per_cyl).fract() + head as f64 * self.head_skew
    }
}

fn zone_track_bytes(outer: u64, inner: u64, zone: u64, zones: u64) -> u64 {
    let frac = if zones > 1 {
        zone as f64 / (zones - 1) as f64
    } else {
        0.0
    };
    let bytes = outer as f64 + (inner as f64 - outer as f64) * frac;
    ((bytes / SECTOR as f64).round() as u64).max(1) * SECTOR
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2 zones, 2 heads; outer tracks 4 sectors, inner 2 sectors; capacity 24 sectors needs
    /// 2 cylinders per zone (one cylinder of each zone holds 2*(4+2) = 12 sectors).
    fn small() -> Geometry {
        Geometry::new(&Layout {
            capacity: 24 * SECTOR,
            heads: 2,
            zones: 2,
            outer_track_bytes: 4 * SECTOR,
            inner_track_bytes: 2 * SECTOR,
            head_skew: 0.25,
            cyl_skew: 0.5,
        })
    }

    #[test]
    fn zones_hold_the_capacity() {
        let g = small();
        assert_eq!(
            (g.cylinders(), g.cylinders_per_zone(), g.zones()),
            (4, 2, 2)
        );
        assert_eq!(g.capacity(), 2 * 2 * 4 * SECTOR + 2 * 2 * 2 * SECTOR);
    }

    #[test]
    fn addresses_fill_track_then_head_then_cylinder() {
        let g = small();
        let at = |sector: u64| {
            let l = g.locate(sector * SECTOR);
            (l.cyl, l.head, l.track_bytes / SECTOR, l.track_end / SECTOR)
        };
        assert_eq!(at(0), (0, 0, 4, 4));
        assert_eq!(at(3), (0, 0, 4, 4));
        assert_eq!(at(4), (0, 1, 4, 8));
        assert_eq!(at(8), (1, 0, 4, 12));
        assert_eq!(at(16), (2, 0, 2, 18)); // first inner-zone track
        assert_eq!(at(23), (3, 1, 2, 24));
    }

    /// Angles: sector s of a track starts at skew + s/sectors. Track (0,1) is skewed by the head
    /// skew 0.25; track (1,0) by cylinder skew plus one head skew: 0.5 + 0.25 = 0.75.
    #[test]
    fn angles_include_track_skew() {
        let g = small();
        let angle = |sector: u64| g.locate(sector * SECTOR).angle;
        assert_eq!(angle(0), 0.0);
        assert_eq!(angle(1), 0.25);
        assert_eq!(angle(4), 0.25);
        assert_eq!(angle(6), 0.75);
        assert_eq!(angle(8), 0.75);
        assert_eq!(angle(10), 0.25);
    }

    #[test]
    fn addresses_past_the_end_are_clamped() {
        let g = small();
        assert_eq!(g.locate(u64::MAX), g.locate(g.capacity() - 1));
    }
}
