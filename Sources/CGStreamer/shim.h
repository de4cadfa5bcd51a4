#ifndef CGSTREAMER_SHIM_H
#define CGSTREAMER_SHIM_H
#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/app/gstappsink.h>

// Swift cannot call C variadic functions: typed setters around g_object_set.
static inline void cairplay_set_string(gpointer object, const char *name, const char *value) {
    g_object_set(object, name, value, NULL);
}
static inline void cairplay_set_double(gpointer object, const char *name, double value) {
    g_object_set(object, name, value, NULL);
}
static inline void cairplay_set_int(gpointer object, const char *name, int value) {
    g_object_set(object, name, value, NULL);
}
static inline void cairplay_set_uint(gpointer object, const char *name, unsigned int value) {
    g_object_set(object, name, value, NULL);
}
static inline void cairplay_set_bool(gpointer object, const char *name, gboolean value) {
    g_object_set(object, name, value, NULL);
}
static inline void cairplay_set_object(gpointer object, const char *name, gpointer value) {
    g_object_set(object, name, value, NULL);
}
static inline GstMessageType cairplay_message_type(GstMessage *message) {
    return GST_MESSAGE_TYPE(message);
}
static inline GstObject *cairplay_message_source(GstMessage *message) {
    return GST_MESSAGE_SRC(message);
}
/// The factory name of an element ("souphttpsrc"), or NULL.
static inline const char *cairplay_element_factory_name(GstElement *element) {
    GstElementFactory *factory = gst_element_get_factory(element);
    return factory ? GST_OBJECT_NAME(factory) : NULL;
}
/// Connects "deep-element-added" (bin, sub_bin, element, user_data).
typedef void (*cairplay_deep_element_added_cb)(GstBin *bin, GstBin *sub_bin, GstElement *element, gpointer user_data);
static inline gulong cairplay_connect_deep_element_added(gpointer bin, cairplay_deep_element_added_cb callback, gpointer data) {
    return g_signal_connect_data(bin, "deep-element-added", G_CALLBACK(callback), data, NULL, (GConnectFlags)0);
}
/// Connects playbin's "source-setup" (playbin, source, user_data).
typedef void (*cairplay_source_setup_cb)(GstElement *playbin, GstElement *source, gpointer user_data);
static inline gulong cairplay_connect_source_setup(gpointer playbin, cairplay_source_setup_cb callback, gpointer data) {
    return g_signal_connect_data(playbin, "source-setup", G_CALLBACK(callback), data, NULL, (GConnectFlags)0);
}
/// True when the element fetches from a URI (a GstURIHandler of type SRC: filesrc, souphttpsrc, …).
static inline gboolean cairplay_is_uri_source(GstElement *element) {
    return GST_IS_URI_HANDLER(element) && gst_uri_handler_get_uri_type(GST_URI_HANDLER(element)) == GST_URI_SRC;
}
/// True when the object has a property of this name.
static inline gboolean cairplay_has_property(gpointer object, const char *name) {
    return g_object_class_find_property(G_OBJECT_GET_CLASS(object), name) != NULL;
}
/// Copies interleaved samples into a new buffer and pushes it (the app source takes the buffer).
static inline GstFlowReturn cairplay_push_samples(GstElement *appsrc, const void *data, gsize size) {
    GstBuffer *buffer = gst_buffer_new_allocate(NULL, size, NULL);
    gst_buffer_fill(buffer, 0, data, size);
    return gst_app_src_push_buffer(GST_APP_SRC(appsrc), buffer);
}
/// The pipeline's minimum latency in nanoseconds (what a live sink adds before rendering), or -1.
static inline gint64 cairplay_query_latency(GstElement *pipeline) {
    gboolean live = FALSE;
    GstClockTime minimum = 0, maximum = 0;
    GstQuery *query = gst_query_new_latency();
    gboolean answered = gst_element_query(pipeline, query);
    if (answered) gst_query_parse_latency(query, &live, &minimum, &maximum);
    gst_query_unref(query);
    if (!answered || minimum == GST_CLOCK_TIME_NONE) return -1;
    return (gint64)minimum;
}
/// Pulls one decoded buffer (waiting at most `timeout` ns) and copies at most `capacity` bytes out;
/// returns the byte count, or -1 when nothing came.
static inline gssize cairplay_pull_bytes(GstElement *appsink, void *out, gsize capacity, GstClockTime timeout) {
    GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(appsink), timeout);
    if (sample == NULL) return -1;
    GstBuffer *buffer = gst_sample_get_buffer(sample);
    gsize size = buffer ? gst_buffer_get_size(buffer) : 0;
    if (size > capacity) size = capacity;
    if (buffer) gst_buffer_extract(buffer, 0, out, size);
    gst_sample_unref(sample);
    return (gssize)size;
}
#endif
