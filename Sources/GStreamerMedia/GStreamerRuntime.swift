import CGStreamer

/// The GStreamer library: initialisation and registry questions.
public enum GStreamerRuntime {
    /// Initialises GStreamer once for the process; later calls do nothing.
    public static func initialize() {
        _ = initialization
    }

    private static let initialization: Void = {
        gst_init(nil, nil)
    }()

    /// The version text of the linked GStreamer, e.g. `GStreamer 1.22.0`.
    public static var version: String {
        initialize()
        guard let text = gst_version_string() else { return "GStreamer (unknown version)" }
        defer { g_free(text) }
        return String(cString: text)
    }

    /// True when an element factory of this name is registered (a plugin that provides it is installed).
    public static func hasElement(_ name: String) -> Bool {
        initialize()
        guard let factory = gst_element_factory_find(name) else { return false }
        gst_object_unref(UnsafeMutableRawPointer(factory))
        return true
    }
}
