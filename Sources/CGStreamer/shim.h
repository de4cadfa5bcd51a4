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
/// Takes every tag message waiting on the pipeline's bus and keeps the first title, artist,
/// album, genre and image it finds (strings and bytes allocated with g_malloc: free with g_free).
static inline void cairplay_collect_tags(GstElement *pipeline, gchar **title, gchar **artist, gchar **album, gchar **genre,
                                         guint8 **image, gsize *image_size, gchar **image_type) {
    GstBus *bus = gst_element_get_bus(pipeline);
    if (bus == NULL) return;
    GstMessage *message;
    while ((message = gst_bus_pop_filtered(bus, GST_MESSAGE_TAG)) != NULL) {
        GstTagList *tags = NULL;
        gst_message_parse_tag(message, &tags);
        if (tags != NULL) {
            if (*title == NULL) gst_tag_list_get_string(tags, GST_TAG_TITLE, title);
            if (*artist == NULL) gst_tag_list_get_string(tags, GST_TAG_ARTIST, artist);
            if (*album == NULL) gst_tag_list_get_string(tags, GST_TAG_ALBUM, album);
            if (*genre == NULL) gst_tag_list_get_string(tags, GST_TAG_GENRE, genre);
            GstSample *sample = NULL;
            if (*image == NULL && (gst_tag_list_get_sample(tags, GST_TAG_IMAGE, &sample) || gst_tag_list_get_sample(tags, GST_TAG_PREVIEW_IMAGE, &sample))) {
                GstBuffer *buffer = gst_sample_get_buffer(sample);
                GstCaps *caps = gst_sample_get_caps(sample);
                if (buffer != NULL && gst_buffer_get_size(buffer) <= 4 * 1024 * 1024) {
                    *image_size = gst_buffer_get_size(buffer);
                    *image = g_malloc(*image_size);
                    gst_buffer_extract(buffer, 0, *image, *image_size);
                    if (caps != NULL && gst_caps_get_size(caps) > 0) *image_type = g_strdup(gst_structure_get_name(gst_caps_get_structure(caps, 0)));
                }
                gst_sample_unref(sample);
            }
            gst_tag_list_unref(tags);
        }
        gst_message_unref(message);
    }
    gst_object_unref(bus);
}
/// The stream's duration in nanoseconds, or -1 when unknown.
static inline gint64 cairplay_duration(GstElement *pipeline) {
    gint64 duration = -1;
    if (!gst_element_query_duration(pipeline, GST_FORMAT_TIME, &duration)) return -1;
    return duration;
}
/// Seeks to a position in nanoseconds (accurately, flushing); false when the stream cannot seek.
static inline gboolean cairplay_seek(GstElement *pipeline, gint64 position) {
    return gst_element_seek_simple(pipeline, GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE, position);
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
/// Pushes bytes as one buffer stamped with its time and duration (nanoseconds), for elements
/// that need a continuous timeline (an encoder treats unstamped buffers as discontinuities).
static inline GstFlowReturn cairplay_push_samples_at(GstElement *appsrc, const void *data, gsize size, guint64 pts, guint64 duration) {
    GstBuffer *buffer = gst_buffer_new_allocate(NULL, size, NULL);
    gst_buffer_fill(buffer, 0, data, size);
    GST_BUFFER_PTS(buffer) = pts;
    GST_BUFFER_DURATION(buffer) = duration;
    return gst_app_src_push_buffer(GST_APP_SRC(appsrc), buffer);
}
/// The pipeline's running time now (its clock less its base time), in nanoseconds; -1 before it
/// has a clock. An audio sink's clock counts the samples its card played.
static inline gint64 cairplay_running_time(GstElement *pipeline) {
    GstClock *clock = gst_element_get_clock(pipeline);
    if (clock == NULL) return -1;
    GstClockTime now = gst_clock_get_time(clock);
    GstClockTime base = gst_element_get_base_time(pipeline);
    gst_object_unref(clock);
    if (now == GST_CLOCK_TIME_NONE || base == GST_CLOCK_TIME_NONE || now < base) return -1;
    return (gint64)(now - base);
}
/// The largest `buffer-time` (µs) of the pipeline's audio sinks (alsasink, pulsesink: the
/// audio their ring buffer holds before the card starts), or 0 when no sink has one.
static inline gint64 cairplay_sink_buffer_time(GstElement *pipeline) {
    GstIterator *sinks = gst_bin_iterate_sinks((GstBin *)pipeline);
    GValue item = G_VALUE_INIT;
    gint64 longest = 0;
    while (gst_iterator_next(sinks, &item) == GST_ITERATOR_OK) {
        GObject *sink = g_value_get_object(&item);
        if (g_object_class_find_property(G_OBJECT_GET_CLASS(sink), "buffer-time") != NULL) {
            gint64 microseconds = 0;
            g_object_get(sink, "buffer-time", &microseconds, NULL);
            if (microseconds > longest) longest = microseconds;
        }
        g_value_unset(&item);
    }
    gst_iterator_free(sinks);
    return longest;
}
/// Tells an app source that no more buffers come (the pipeline drains, then its sink sees EOS).
static inline GstFlowReturn cairplay_end_of_stream(GstElement *appsrc) {
    return gst_app_src_end_of_stream(GST_APP_SRC(appsrc));
}
#endif
