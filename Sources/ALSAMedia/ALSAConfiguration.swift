internal import CALSA

/// What alsa-lib's configuration defines, as every program on the box reads it (the system's
/// files, `~/.asoundrc`, or `ALSA_CONFIG_PATH` when set).
public enum ALSAConfiguration {
    /// Whether a PCM named `name` is defined (`pcm.NAME`): e.g. `pipewire`, which PipeWire's
    /// ALSA plugin (package pipewire-alsa) defines. False when libasound cannot be loaded or
    /// the configuration cannot be read.
    public static func definesPCM(_ name: String) -> Bool {
        guard cairplay_alsa_load() == nil else { return false }
        var top: OpaquePointer?
        guard snd_config_update_ref(&top) >= 0, let top else { return false }
        defer { snd_config_unref(top) }
        var node: OpaquePointer?
        return snd_config_search(top, "pcm." + name, &node) == 0
    }
}
