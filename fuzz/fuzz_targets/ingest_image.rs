//! Fuzzes image ingest (`texset_core::set::decode_texture`): the bytes of a map file, with the
//! first byte choosing the file name's extension and map kind, must give a texture or an
//! `IngestError` naming the file, never a panic, a hang or a decompression bomb.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use texset_core::set::MapKind;
use texset_core::set::NormalConvention;
use texset_core::set::decode_texture;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let name = ["t_basecolor.png", "t_normal.jpg", "t_roughness.tga", "t_height.exr"][usize::from(selector & 3)];
    let kind = [MapKind::Basecolor, MapKind::Normal, MapKind::Roughness, MapKind::Height][usize::from(selector & 3)];
    let path = Path::new(name);
    match decode_texture(bytes, path, kind, NormalConvention::default()) {
        Ok(texture) => {
            assert_eq!(texture.texels.len(), (texture.info.width * texture.info.height * texture.info.channels) as usize);
            assert!(texture.texels.iter().all(|v| v.is_finite()));
        }
        Err(e) => assert!(e.to_string().contains(name), "error does not name the file: {e}"),
    }
});
