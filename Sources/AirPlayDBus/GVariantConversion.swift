import AirPlayNowPlaying
internal import CGio

/// `DBusValue` to GVariant and back, for the few types MPRIS uses.
enum GVariantConversion {
    /// A new floating GVariant for `value`.
    static func variant(_ value: DBusValue) -> OpaquePointer {
        switch value {
        case .string(let text): return g_variant_new_string(text)
        case .objectPath(let path): return g_variant_new_object_path(g_variant_is_object_path(path) != 0 ? path : "/")
        case .int64(let number): return g_variant_new_int64(gint64(number))
        case .double(let number): return g_variant_new_double(number)
        case .bool(let flag): return g_variant_new_boolean(flag ? 1 : 0)
        case .strings(let texts):
            guard !texts.isEmpty else { return g_variant_new_strv(nil, 0) }
            var pointers = texts.map { strdup($0) }
            defer { pointers.forEach { free($0) } }
            return pointers.withUnsafeMutableBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<gchar>?.self, capacity: buffer.count) {
                    g_variant_new_strv($0, gssize(buffer.count))
                }
            }
        case .dictionary(let entries):
            return dictionary(entries)
        }
    }

    /// An `a{sv}` of `entries`, in key order.
    static func dictionary(_ entries: [String: DBusValue]) -> OpaquePointer {
        let type = g_variant_type_new("a{sv}")
        defer { g_variant_type_free(type) }
        let builder = g_variant_builder_new(type)
        defer { g_variant_builder_unref(builder) }
        for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
            g_variant_builder_add_value(builder, g_variant_new_dict_entry(g_variant_new_string(key), g_variant_new_variant(variant(value))))
        }
        return g_variant_builder_end(builder)
    }

    /// A tuple of `children` (floating references, taken over).
    static func tuple(_ children: [OpaquePointer?]) -> OpaquePointer {
        var items = children
        return items.withUnsafeMutableBufferPointer { g_variant_new_tuple($0.baseAddress, gsize($0.count)) }
    }

    /// The `int64` child `index` of a tuple, if it is one.
    static func int64(in tuple: OpaquePointer?, at index: Int) -> Int64? {
        guard let tuple, g_variant_n_children(tuple) > index, let child = g_variant_get_child_value(tuple, gsize(index)) else { return nil }
        defer { g_variant_unref(child) }
        guard g_variant_is_of_type(child, g_variant_type_checked_("x")) != 0 else { return nil }
        return Int64(g_variant_get_int64(child))
    }

    /// A `double` value, if it is one.
    static func double(_ value: OpaquePointer?) -> Double? {
        guard let value, g_variant_is_of_type(value, g_variant_type_checked_("d")) != 0 else { return nil }
        return g_variant_get_double(value)
    }
}
