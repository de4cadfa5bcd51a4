/// Whether a playlist's video can be played here at all: DRM (FairPlay: the key format
/// `com.apple.streamingkeydelivery`, or SAMPLE-AES with `skd://` keys; Widevine's and
/// PlayReady's key formats) and SAMPLE-AES cannot, and a receiver must say so with a reason
/// instead of handing the player something that fails or crashes (the Apple TV app, Disney+,
/// paid YouTube films). AES-128 with an identity key plays, whatever its URI's scheme (a
/// custom-scheme key, `skd://` included, is asked of the sender: `hls.md` §5.8); where a
/// playlist offers several key formats for the same segments, one such key is enough.
public enum PlaylistProtection {
    /// Why a master cannot be played (its `EXT-X-SESSION-KEY`s announce DRM only), or nil.
    public static func refusal(master: MasterPlaylist) -> String? {
        refusal(keys: master.sessionKeys)
    }

    /// Why a media playlist cannot be played (a segment only DRM or SAMPLE-AES can open), or nil.
    public static func refusal(media: MediaPlaylist) -> String? {
        for segment in media.segments {
            if let reason = refusal(keys: segment.keys) { return reason }
        }
        return nil
    }

    /// The reason the keys in effect for a segment refuse it: none when it is clear or any key is
    /// identity AES-128.
    static func refusal(keys: [AttributeList]) -> String? {
        let encrypting = keys.filter { ($0["METHOD"] ?? "NONE") != "NONE" }
        guard !encrypting.isEmpty, !encrypting.contains(where: isOpenable) else { return nil }
        if encrypting.contains(where: isFairPlay) { return "FairPlay-protected video (skd:// keys) cannot be played here" }
        if let format = encrypting.lazy.compactMap({ $0["KEYFORMAT"] }).first(where: { $0 != "identity" }) {
            return "DRM-protected video (KEYFORMAT \(format.prefix(80))) cannot be played here"
        }
        return "SAMPLE-AES encrypted video cannot be played here (only AES-128 is)"
    }

    /// An AES-128 identity key: what the player can open (the gateway fetches its key).
    static func isOpenable(_ key: AttributeList) -> Bool {
        key["METHOD"] == "AES-128" && (key["KEYFORMAT"] ?? "identity") == "identity"
    }

    /// FairPlay Streaming: its key format, or sample encryption with its key scheme.
    static func isFairPlay(_ key: AttributeList) -> Bool {
        key["KEYFORMAT"] == "com.apple.streamingkeydelivery"
            || (key["METHOD"]?.hasPrefix("SAMPLE-AES") == true && key["URI"]?.lowercased().hasPrefix("skd://") == true)
    }
}
