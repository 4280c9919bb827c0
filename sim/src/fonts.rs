//! The one font every plot uses, embedded in the binary.
//!
//! Plots draw text through plotters' pure-Rust `ab_glyph` path, so the
//! binary links neither fontconfig nor freetype and renders the same text on
//! every machine. The font is DejaVu Sans 2.37 (Bitstream Vera licence; see
//! `sim/assets/DejaVuSans-LICENSE.txt`), registered under the family names
//! the plots ask for.

use std::sync::OnceLock;

use plotters::style::FontStyle;

/// DejaVu Sans (Debian 12's fonts-dejavu-core), ~740 KiB.
const DEJAVU_SANS: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// Family names the plots use; each maps to the embedded font.
pub const FAMILIES: [&str; 3] = ["sans-serif", "serif", "monospace"];

/// Registers the embedded font (once per process; later calls return the
/// first outcome). An error means the embedded bytes are not a font, which
/// plotting then reports as a plot problem.
pub fn ensure_registered() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        // Bold / italic ask for the same family and fall back to Normal.
        for family in FAMILIES {
            plotters::style::register_font(family, FontStyle::Normal, DEJAVU_SANS)
                .map_err(|_| "the embedded DejaVu Sans font could not be parsed".to_string())?;
        }
        Ok(())
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use plotters::prelude::*;

    #[test]
    fn embedded_font_registers_and_draws_text() {
        ensure_registered().expect("font registers");
        let (w, h) = (120u32, 40u32);
        let mut buf = vec![255u8; (w * h * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
            root.draw(&Text::new(
                "K1 0.05",
                (5, 10),
                ("sans-serif", 20).into_font().color(&BLACK),
            ))
            .expect("draw text");
            root.present().expect("present");
        }
        let dark = buf.chunks(3).filter(|p| p[0] < 128).count();
        assert!(dark > 50, "text drew {dark} dark pixels");
    }
}
