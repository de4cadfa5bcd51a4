// Every GLib, GObject, GIO and GStreamer entry point the Swift code calls (directly, or
// through the static inline helpers in CGStreamer's and CGio's shim.h), defined under its own
// name and forwarded to the library, which is opened on the first call (CLazyLink). Each
// library is looked up in its own soname: GIO only for D-Bus (MPRIS), GStreamer only for
// playing, so one never pulls in the other.
#include "glib_lazy.h"
#include "lazy_link.h"
#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/app/gstappsink.h>
#include <gio/gio.h>

static cairplay_lazy_library glib = CAIRPLAY_LAZY_LIBRARY("libglib-2.0.so.0", "libglib2.0-0");
static cairplay_lazy_library gobject = CAIRPLAY_LAZY_LIBRARY("libgobject-2.0.so.0", "libglib2.0-0");
static cairplay_lazy_library gio = CAIRPLAY_LAZY_LIBRARY("libgio-2.0.so.0", "libglib2.0-0");
static cairplay_lazy_library gstreamer = CAIRPLAY_LAZY_LIBRARY("libgstreamer-1.0.so.0", "libgstreamer1.0-0");
static cairplay_lazy_library gstapp = CAIRPLAY_LAZY_LIBRARY("libgstapp-1.0.so.0", "gstreamer1.0-plugins-base");

// The variadic entry points, through their va_list forms.
CAIRPLAY_LAZY_FORWARD_VOID(gobject, g_object_set_valist, (GObject *object, const gchar *first_property_name, va_list var_args),
                           (object, first_property_name, var_args))
CAIRPLAY_LAZY_FORWARD(glib, GError *, g_error_new_valist, (GQuark domain, gint code, const gchar *format, va_list args),
                      (domain, code, format, args))
CAIRPLAY_LAZY_FORWARD_VOID(glib, g_propagate_error, (GError **dest, GError *src), (dest, src))

void g_object_set(gpointer object, const gchar *first_property_name, ...) {
    va_list arguments;
    va_start(arguments, first_property_name);
    g_object_set_valist(object, first_property_name, arguments);
    va_end(arguments);
}

CAIRPLAY_LAZY_FORWARD_VOID(gobject, g_object_get_valist, (GObject *object, const gchar *first_property_name, va_list var_args),
                           (object, first_property_name, var_args))

void g_object_get(gpointer object, const gchar *first_property_name, ...) {
    va_list arguments;
    va_start(arguments, first_property_name);
    g_object_get_valist(object, first_property_name, arguments);
    va_end(arguments);
}

void g_set_error(GError **err, GQuark domain, gint code, const gchar *format, ...) {
    if (err == NULL) return;
    va_list arguments;
    va_start(arguments, format);
    GError *error = g_error_new_valist(domain, code, format, arguments);
    va_end(arguments);
    g_propagate_error(err, error);
}

CAIRPLAY_LAZY_FORWARD_VOID(glib, g_clear_error, (GError **err), (err))
CAIRPLAY_LAZY_FORWARD_VOID(glib, g_error_free, (GError *error), (error))
CAIRPLAY_LAZY_FORWARD_VOID(glib, g_free, (gpointer mem), (mem))
CAIRPLAY_LAZY_FORWARD(glib, gboolean, g_main_context_iteration, (GMainContext *context, gboolean may_block), (context, may_block))
CAIRPLAY_LAZY_FORWARD(glib, GMainContext *, g_main_context_new, (void), ())
CAIRPLAY_LAZY_FORWARD_VOID(glib, g_main_context_pop_thread_default, (GMainContext *context), (context))
CAIRPLAY_LAZY_FORWARD_VOID(glib, g_main_context_push_thread_default, (GMainContext *context), (context))
CAIRPLAY_LAZY_FORWARD_VOID(glib, g_main_context_unref, (GMainContext *context), (context))
CAIRPLAY_LAZY_FORWARD_VOID(glib, g_main_context_wakeup, (GMainContext *context), (context))
CAIRPLAY_LAZY_FORWARD(glib, gpointer, g_malloc, (gsize n_bytes), (n_bytes))
CAIRPLAY_LAZY_FORWARD(glib, const gchar *, g_quark_to_string, (GQuark quark), (quark))
CAIRPLAY_LAZY_FORWARD_VOID(glib, g_set_error_literal, (GError **err, GQuark domain, gint code, const gchar *message), (err, domain, code, message))
CAIRPLAY_LAZY_FORWARD(glib, gchar*, g_strdup, (const gchar *str), (str))
CAIRPLAY_LAZY_FORWARD_VOID(glib, g_variant_builder_add_value, (GVariantBuilder *builder, GVariant *value), (builder, value))
CAIRPLAY_LAZY_FORWARD(glib, GVariant *, g_variant_builder_end, (GVariantBuilder *builder), (builder))
CAIRPLAY_LAZY_FORWARD(glib, GVariantBuilder *, g_variant_builder_new, (const GVariantType *type), (type))
CAIRPLAY_LAZY_FORWARD_VOID(glib, g_variant_builder_unref, (GVariantBuilder *builder), (builder))
CAIRPLAY_LAZY_FORWARD(glib, GVariant *, g_variant_get_child_value, (GVariant *value, gsize index_), (value, index_))
CAIRPLAY_LAZY_FORWARD(glib, gdouble, g_variant_get_double, (GVariant *value), (value))
CAIRPLAY_LAZY_FORWARD(glib, gint64, g_variant_get_int64, (GVariant *value), (value))
CAIRPLAY_LAZY_FORWARD(glib, const gchar *, g_variant_get_string, (GVariant *value, gsize *length), (value, length))
CAIRPLAY_LAZY_FORWARD(glib, guint32, g_variant_get_uint32, (GVariant *value), (value))
CAIRPLAY_LAZY_FORWARD(glib, gboolean, g_variant_is_object_path, (const gchar *string), (string))
CAIRPLAY_LAZY_FORWARD(glib, gboolean, g_variant_is_of_type, (GVariant *value, const GVariantType *type), (value, type))
CAIRPLAY_LAZY_FORWARD(glib, gsize, g_variant_n_children, (GVariant *value), (value))
CAIRPLAY_LAZY_FORWARD(glib, GVariant *, g_variant_new_boolean, (gboolean value), (value))
CAIRPLAY_LAZY_FORWARD(glib, GVariant *, g_variant_new_dict_entry, (GVariant *key, GVariant *value), (key, value))
CAIRPLAY_LAZY_FORWARD(glib, GVariant *, g_variant_new_double, (gdouble value), (value))
CAIRPLAY_LAZY_FORWARD(glib, GVariant *, g_variant_new_int64, (gint64 value), (value))
CAIRPLAY_LAZY_FORWARD(glib, GVariant *, g_variant_new_object_path, (const gchar *object_path), (object_path))
CAIRPLAY_LAZY_FORWARD(glib, GVariant *, g_variant_new_string, (const gchar *string), (string))
CAIRPLAY_LAZY_FORWARD(glib, GVariant *, g_variant_new_strv, (const gchar * const *strv, gssize length), (strv, length))
CAIRPLAY_LAZY_FORWARD(glib, GVariant *, g_variant_new_tuple, (GVariant * const *children, gsize n_children), (children, n_children))
CAIRPLAY_LAZY_FORWARD(glib, GVariant *, g_variant_new_uint32, (guint32 value), (value))
CAIRPLAY_LAZY_FORWARD(glib, GVariant *, g_variant_new_variant, (GVariant *value), (value))
CAIRPLAY_LAZY_FORWARD(glib, GVariant *, g_variant_ref_sink, (GVariant *value), (value))
CAIRPLAY_LAZY_FORWARD(glib, const GVariantType *, g_variant_type_checked_, (const gchar *arg0), (arg0))
CAIRPLAY_LAZY_FORWARD_VOID(glib, g_variant_type_free, (GVariantType *type), (type))
CAIRPLAY_LAZY_FORWARD(glib, GVariantType *, g_variant_type_new, (const gchar *type_string), (type_string))
CAIRPLAY_LAZY_FORWARD_VOID(glib, g_variant_unref, (GVariant *value), (value))

CAIRPLAY_LAZY_FORWARD(gobject, GParamSpec*, g_object_class_find_property, (GObjectClass *oclass, const gchar *property_name), (oclass, property_name))
CAIRPLAY_LAZY_FORWARD_VOID(gobject, g_object_unref, (gpointer object), (object))
CAIRPLAY_LAZY_FORWARD(gobject, gulong, g_signal_connect_data, (gpointer instance, const gchar *detailed_signal, GCallback c_handler, gpointer data, GClosureNotify destroy_data, GConnectFlags connect_flags), (instance, detailed_signal, c_handler, data, destroy_data, connect_flags))
CAIRPLAY_LAZY_FORWARD(gobject, GTypeInstance*, g_type_check_instance_cast, (GTypeInstance *instance, GType iface_type), (instance, iface_type))
CAIRPLAY_LAZY_FORWARD(gobject, gboolean, g_type_check_instance_is_a, (GTypeInstance *instance, GType iface_type), (instance, iface_type))

CAIRPLAY_LAZY_FORWARD(gio, gchar *, g_dbus_address_get_for_bus_sync, (GBusType bus_type, GCancellable *cancellable, GError **error), (bus_type, cancellable, error))
CAIRPLAY_LAZY_FORWARD(gio, GVariant *, g_dbus_connection_call_sync, (GDBusConnection *connection, const gchar *bus_name, const gchar *object_path, const gchar *interface_name, const gchar *method_name, GVariant *parameters, const GVariantType *reply_type, GDBusCallFlags flags, gint timeout_msec, GCancellable *cancellable, GError **error), (connection, bus_name, object_path, interface_name, method_name, parameters, reply_type, flags, timeout_msec, cancellable, error))
CAIRPLAY_LAZY_FORWARD(gio, gboolean, g_dbus_connection_close_sync, (GDBusConnection *connection, GCancellable *cancellable, GError **error), (connection, cancellable, error))
CAIRPLAY_LAZY_FORWARD(gio, gboolean, g_dbus_connection_emit_signal, (GDBusConnection *connection, const gchar *destination_bus_name, const gchar *object_path, const gchar *interface_name, const gchar *signal_name, GVariant *parameters, GError **error), (connection, destination_bus_name, object_path, interface_name, signal_name, parameters, error))
CAIRPLAY_LAZY_FORWARD(gio, gboolean, g_dbus_connection_is_closed, (GDBusConnection *connection), (connection))
CAIRPLAY_LAZY_FORWARD(gio, GDBusConnection *, g_dbus_connection_new_for_address_sync, (const gchar *address, GDBusConnectionFlags flags, GDBusAuthObserver *observer, GCancellable *cancellable, GError **error), (address, flags, observer, cancellable, error))
CAIRPLAY_LAZY_FORWARD(gio, guint, g_dbus_connection_register_object, (GDBusConnection *connection, const gchar *object_path, GDBusInterfaceInfo *interface_info, const GDBusInterfaceVTable *vtable, gpointer user_data, GDestroyNotify user_data_free_func, GError **error), (connection, object_path, interface_info, vtable, user_data, user_data_free_func, error))
CAIRPLAY_LAZY_FORWARD_VOID(gio, g_dbus_connection_set_exit_on_close, (GDBusConnection *connection, gboolean exit_on_close), (connection, exit_on_close))
CAIRPLAY_LAZY_FORWARD(gio, GQuark, g_dbus_error_quark, (void), ())
CAIRPLAY_LAZY_FORWARD_VOID(gio, g_dbus_method_invocation_return_dbus_error, (GDBusMethodInvocation *invocation, const gchar *error_name, const gchar *error_message), (invocation, error_name, error_message))
CAIRPLAY_LAZY_FORWARD_VOID(gio, g_dbus_method_invocation_return_value, (GDBusMethodInvocation *invocation, GVariant *parameters), (invocation, parameters))
CAIRPLAY_LAZY_FORWARD(gio, GDBusNodeInfo *, g_dbus_node_info_new_for_xml, (const gchar *xml_data, GError **error), (xml_data, error))
CAIRPLAY_LAZY_FORWARD_VOID(gio, g_dbus_node_info_unref, (GDBusNodeInfo *info), (info))

CAIRPLAY_LAZY_FORWARD(gstreamer, GstElement*, gst_bin_get_by_name, (GstBin *bin, const gchar *name), (bin, name))
CAIRPLAY_LAZY_FORWARD(gstreamer, gsize, gst_buffer_extract, (GstBuffer *buffer, gsize offset, gpointer dest, gsize size), (buffer, offset, dest, size))
CAIRPLAY_LAZY_FORWARD(gstreamer, gsize, gst_buffer_fill, (GstBuffer *buffer, gsize offset, gconstpointer src, gsize size), (buffer, offset, src, size))
CAIRPLAY_LAZY_FORWARD(gstreamer, gsize, gst_buffer_get_size, (GstBuffer *buffer), (buffer))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstBuffer *, gst_buffer_new_allocate, (GstAllocator * allocator, gsize size, GstAllocationParams * params), (allocator, size, params))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstMessage *, gst_bus_pop_filtered, (GstBus * bus, GstMessageType types), (bus, types))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstMessage *, gst_bus_timed_pop_filtered, (GstBus * bus, GstClockTime timeout, GstMessageType types), (bus, timeout, types))
CAIRPLAY_LAZY_FORWARD(gstreamer, guint, gst_caps_get_size, (const GstCaps *caps), (caps))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstStructure *, gst_caps_get_structure, (const GstCaps *caps, guint index), (caps, index))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstElementFactory *, gst_element_factory_find, (const gchar *name), (name))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstElement*, gst_element_factory_make, (const gchar *factoryname, const gchar *name), (factoryname, name))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstBus *, gst_element_get_bus, (GstElement * element), (element))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstElementFactory*, gst_element_get_factory, (GstElement *element), (element))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstStateChangeReturn, gst_element_get_state, (GstElement * element, GstState * state, GstState * pending, GstClockTime timeout), (element, state, pending, timeout))
CAIRPLAY_LAZY_FORWARD(gstreamer, gboolean, gst_element_query, (GstElement *element, GstQuery *query), (element, query))
CAIRPLAY_LAZY_FORWARD(gstreamer, gboolean, gst_element_query_duration, (GstElement *element, GstFormat format, gint64 *duration), (element, format, duration))
CAIRPLAY_LAZY_FORWARD(gstreamer, gboolean, gst_element_query_position, (GstElement *element, GstFormat format, gint64 *cur), (element, format, cur))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstClock *, gst_element_get_clock, (GstElement *element), (element))
CAIRPLAY_LAZY_FORWARD_VOID(gstreamer, gst_pipeline_set_latency, (GstPipeline *pipeline, GstClockTime latency), (pipeline, latency))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstIterator *, gst_bin_iterate_sinks, (GstBin *bin), (bin))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstIteratorResult, gst_iterator_next, (GstIterator *it, GValue *elem), (it, elem))
CAIRPLAY_LAZY_FORWARD_VOID(gstreamer, gst_iterator_free, (GstIterator *it), (it))
CAIRPLAY_LAZY_FORWARD(gobject, gpointer, g_value_get_object, (const GValue *value), (value))
CAIRPLAY_LAZY_FORWARD_VOID(gobject, g_value_unset, (GValue *value), (value))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstClockTime, gst_element_get_base_time, (GstElement *element), (element))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstClockTime, gst_clock_get_time, (GstClock *clock), (clock))
CAIRPLAY_LAZY_FORWARD(gstreamer, gboolean, gst_element_seek, (GstElement *element, gdouble rate, GstFormat format, GstSeekFlags flags, GstSeekType start_type, gint64 start, GstSeekType stop_type, gint64 stop), (element, rate, format, flags, start_type, start, stop_type, stop))
CAIRPLAY_LAZY_FORWARD(gstreamer, gboolean, gst_element_seek_simple, (GstElement *element, GstFormat format, GstSeekFlags seek_flags, gint64 seek_pos), (element, format, seek_flags, seek_pos))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstStateChangeReturn, gst_element_set_state, (GstElement *element, GstState state), (element, state))
CAIRPLAY_LAZY_FORWARD_VOID(gstreamer, gst_init, (int *argc, char **argv[]), (argc, argv))
CAIRPLAY_LAZY_FORWARD_VOID(gstreamer, gst_message_parse_buffering, (GstMessage *message, gint *percent), (message, percent))
CAIRPLAY_LAZY_FORWARD_VOID(gstreamer, gst_message_parse_error, (GstMessage *message, GError **gerror, gchar **debug), (message, gerror, debug))
CAIRPLAY_LAZY_FORWARD_VOID(gstreamer, gst_message_parse_state_changed, (GstMessage *message, GstState *oldstate, GstState *newstate, GstState *pending), (message, oldstate, newstate, pending))
CAIRPLAY_LAZY_FORWARD_VOID(gstreamer, gst_message_parse_tag, (GstMessage *message, GstTagList **tag_list), (message, tag_list))
CAIRPLAY_LAZY_FORWARD_VOID(gstreamer, gst_mini_object_unref, (GstMiniObject *mini_object), (mini_object))
CAIRPLAY_LAZY_FORWARD(gstreamer, gpointer, gst_object_ref_sink, (gpointer object), (object))
CAIRPLAY_LAZY_FORWARD_VOID(gstreamer, gst_object_unref, (gpointer object), (object))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstElement *, gst_parse_bin_from_description, (const gchar * bin_description, gboolean ghost_unlinked_pads, GError ** err), (bin_description, ghost_unlinked_pads, err))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstElement *, gst_parse_launch, (const gchar * pipeline_description, GError ** error), (pipeline_description, error))
CAIRPLAY_LAZY_FORWARD(gstreamer, guint, gst_plugin_feature_get_rank, (GstPluginFeature *feature), (feature))
CAIRPLAY_LAZY_FORWARD_VOID(gstreamer, gst_plugin_feature_set_rank, (GstPluginFeature *feature, guint rank), (feature, rank))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstQuery*, gst_query_new_latency, (void), ())
CAIRPLAY_LAZY_FORWARD(gstreamer, GstQuery*, gst_query_new_seeking, (GstFormat format), (format))
CAIRPLAY_LAZY_FORWARD_VOID(gstreamer, gst_query_parse_latency, (GstQuery *query, gboolean *live, GstClockTime *min_latency, GstClockTime *max_latency), (query, live, min_latency, max_latency))
CAIRPLAY_LAZY_FORWARD_VOID(gstreamer, gst_query_parse_seeking, (GstQuery *query, GstFormat *format, gboolean *seekable, gint64 *segment_start, gint64 *segment_end), (query, format, seekable, segment_start, segment_end))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstRegistry *, gst_registry_get, (void), ())
CAIRPLAY_LAZY_FORWARD(gstreamer, GstPluginFeature *, gst_registry_lookup_feature, (GstRegistry *registry, const char *name), (registry, name))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstBuffer *, gst_sample_get_buffer, (GstSample *sample), (sample))
CAIRPLAY_LAZY_FORWARD(gstreamer, GstCaps *, gst_sample_get_caps, (GstSample *sample), (sample))
CAIRPLAY_LAZY_FORWARD(gstreamer, const gchar *, gst_structure_get_name, (const GstStructure * structure), (structure))
CAIRPLAY_LAZY_FORWARD(gstreamer, gboolean, gst_tag_list_get_sample, (const GstTagList * list, const gchar * tag, GstSample ** sample), (list, tag, sample))
CAIRPLAY_LAZY_FORWARD(gstreamer, gboolean, gst_tag_list_get_string, (const GstTagList * list, const gchar * tag, gchar ** value), (list, tag, value))
CAIRPLAY_LAZY_FORWARD(gstreamer, GType, gst_uri_handler_get_type, (void), ())
CAIRPLAY_LAZY_FORWARD(gstreamer, GstURIType, gst_uri_handler_get_uri_type, (GstURIHandler * handler), (handler))
CAIRPLAY_LAZY_FORWARD(gstreamer, gchar *, gst_version_string, (void), ())

CAIRPLAY_LAZY_FORWARD(gstapp, GType, gst_app_sink_get_type, (void), ())
CAIRPLAY_LAZY_FORWARD(gstapp, GstSample *, gst_app_sink_try_pull_sample, (GstAppSink *appsink, GstClockTime timeout), (appsink, timeout))
CAIRPLAY_LAZY_FORWARD(gstapp, GstFlowReturn, gst_app_src_end_of_stream, (GstAppSrc *appsrc), (appsrc))
CAIRPLAY_LAZY_FORWARD(gstapp, GType, gst_app_src_get_type, (void), ())
CAIRPLAY_LAZY_FORWARD(gstapp, GstFlowReturn, gst_app_src_push_buffer, (GstAppSrc *appsrc, GstBuffer *buffer), (appsrc, buffer))
