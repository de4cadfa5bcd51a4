import AirPlayMedia
internal import CGStreamer

/// The GStreamer library: initialisation and registry questions.
public enum GStreamerRuntime {
    /// Initialises GStreamer once for the process; later calls do nothing.
    public static func initialize() {
        _ = initialization
    }

    private static let initialization: Void = {
        gst_init(nil, nil)
        for name in neverAutoplugged { demote(name) }
    }()

    /// Sinks `autovideosink` must never try. DirectFB's sink (plugins-bad, rank marginal) is
    /// the last one it tries, so every headless box gets there, and libfusion then segfaults in
    /// its own dispatch thread when there is no DirectFB display: a phone's video `/play` took
    /// the whole daemon down. Named explicitly (`video_sink = "dfbvideosink"`) it still works.
    public static let neverAutoplugged = ["dfbvideosink"]

    /// Sets a feature's rank to none for this process, so automatic choosers skip it.
    private static func demote(_ name: String) {
        guard let feature = gst_registry_lookup_feature(gst_registry_get(), name) else { return }
        gst_plugin_feature_set_rank(feature, guint(GST_RANK_NONE.rawValue))
        gst_object_unref(UnsafeMutableRawPointer(feature))
    }

    /// The rank of an element factory, nil when none of that name is installed.
    public static func rank(of name: String) -> Int? {
        initialize()
        guard let feature = gst_registry_lookup_feature(gst_registry_get(), name) else { return nil }
        defer { gst_object_unref(UnsafeMutableRawPointer(feature)) }
        return Int(gst_plugin_feature_get_rank(feature))
    }

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

    /// Builds a pipeline from a launch description and finds its named elements (owned by the
    /// caller, like the pipeline); the error names what failed in `domain`.
    static func launch(_ description: String, named names: [String], domain: String)
        throws(MediaError) -> (pipeline: UnsafeMutablePointer<GstElement>, elements: [UnsafeMutablePointer<GstElement>]) {
        initialize()
        var error: UnsafeMutablePointer<GError>?
        let element = gst_parse_launch(description, &error)
        if let error {
            let message = String(cString: error.pointee.message)
            g_error_free(error)
            if let element { gst_object_unref(UnsafeMutableRawPointer(element)) }
            throw MediaError(code: -2, domain: domain, message: message)
        }
        guard let element else { throw MediaError(code: -2, domain: domain, message: "empty pipeline") }
        let bin = UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstBin.self)
        var found: [UnsafeMutablePointer<GstElement>] = []
        for name in names {
            guard let named = gst_bin_get_by_name(bin, name) else {
                found.forEach { gst_object_unref(UnsafeMutableRawPointer($0)) }
                gst_object_unref(UnsafeMutableRawPointer(element))
                throw MediaError(code: -2, domain: domain, message: "pipeline without its \(name) element")
            }
            found.append(named)
        }
        return (element, found)
    }
}
