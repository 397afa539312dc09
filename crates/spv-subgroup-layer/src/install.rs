//! What the layer installs and where (Linux layout, as Khronos' layers install): the library in
//! `PREFIX/lib`, the manifest in `PREFIX/share/vulkan/explicit_layer.d`, whose `library_path`
//! names the library relative to the manifest. `cargo xtask install` uses these; the tests write
//! a manifest pointing at the library in `target/`.

/// The manifest template; `@LIBRARY_PATH@` stands for the library's path.
pub const MANIFEST_TEMPLATE: &str = include_str!("../manifest/VkLayer_spv_subgroup.json.in");

/// The manifest's file name.
pub const MANIFEST_FILE: &str = "VkLayer_spv_subgroup.json";

/// The manifest's folder under the install prefix.
pub const MANIFEST_DIR: &str = "share/vulkan/explicit_layer.d";

/// The library's file name (the cdylib cargo builds).
pub const LIBRARY_FILE: &str = "libVkLayer_spv_subgroup.so";

/// The library's folder under the install prefix.
pub const LIBRARY_DIR: &str = "lib";

/// The installed manifest's `library_path`: from `PREFIX/share/vulkan/explicit_layer.d` up to
/// `PREFIX` and down to `lib`, so the installed tree can be moved as a whole.
pub const INSTALLED_LIBRARY_PATH: &str = "../../../lib/libVkLayer_spv_subgroup.so";

/// The manifest text with `library_path` set to `library_path` (escaped for JSON).
pub fn manifest_json(library_path: &str) -> String {
    let escaped: String = library_path
        .chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32).chars().collect(),
            c => vec![c],
        })
        .collect();
    MANIFEST_TEMPLATE.replace("@LIBRARY_PATH@", &escaped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_installed_manifest_names_the_library_relative_to_itself() {
        let text = manifest_json(INSTALLED_LIBRARY_PATH);
        let depth = MANIFEST_DIR.split('/').count();
        assert_eq!(
            INSTALLED_LIBRARY_PATH,
            format!("{}{LIBRARY_DIR}/{LIBRARY_FILE}", "../".repeat(depth))
        );
        assert!(text.contains(r#""library_path": "../../../lib/libVkLayer_spv_subgroup.so""#));
        assert!(text.contains(r#""name": "VK_LAYER_SPV_SUBGROUP_lower""#));
        assert!(
            text.contains("\"enable_environment\"") && text.contains("\"disable_environment\"")
        );
        assert!(!text.contains('@'));
    }

    #[test]
    fn paths_are_escaped_for_json() {
        let text = manifest_json("/a \"b\"\\c.so");
        assert!(text.contains(r#""library_path": "/a \"b\"\\c.so""#));
    }
}
