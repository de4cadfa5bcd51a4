#ifndef CGIO_SHIM_H
#define CGIO_SHIM_H
#include <gio/gio.h>

// The D-Bus callbacks GDBus calls on our main-context thread. Swift cannot build a C struct
// of function pointers that capture context, so the vtable is filled here with the trampolines
// the Swift side exports (user_data carries the Swift object).
typedef void (*cairplay_dbus_method_fn)(const char *interface, const char *method, GVariant *parameters,
                                         GDBusMethodInvocation *invocation, gpointer user_data);
typedef GVariant *(*cairplay_dbus_get_fn)(const char *interface, const char *property, gpointer user_data);
typedef gboolean (*cairplay_dbus_set_fn)(const char *interface, const char *property, GVariant *value,
                                         GError **error, gpointer user_data);

typedef struct {
    GDBusInterfaceVTable vtable;
    cairplay_dbus_method_fn method;
    cairplay_dbus_get_fn get;
    cairplay_dbus_set_fn set;
    gpointer user_data;
} cairplay_dbus_object;

static void cairplay_dbus_method_call(GDBusConnection *connection, const gchar *sender, const gchar *path,
                                      const gchar *interface, const gchar *method, GVariant *parameters,
                                      GDBusMethodInvocation *invocation, gpointer user_data) {
    cairplay_dbus_object *object = user_data;
    object->method(interface, method, parameters, invocation, object->user_data);
}

static GVariant *cairplay_dbus_get_property(GDBusConnection *connection, const gchar *sender, const gchar *path,
                                            const gchar *interface, const gchar *property, GError **error,
                                            gpointer user_data) {
    cairplay_dbus_object *object = user_data;
    GVariant *value = object->get(interface, property, object->user_data);
    if (value == NULL) {
        g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_PROPERTY, "no property %s", property);
    }
    return value;
}

static gboolean cairplay_dbus_set_property(GDBusConnection *connection, const gchar *sender, const gchar *path,
                                           const gchar *interface, const gchar *property, GVariant *value,
                                           GError **error, gpointer user_data) {
    cairplay_dbus_object *object = user_data;
    return object->set(interface, property, value, error, object->user_data);
}

/// Registers one interface of an object, its calls going to the three functions.
static inline guint cairplay_dbus_register(GDBusConnection *connection, const char *path, GDBusInterfaceInfo *info,
                                           cairplay_dbus_object *object, GError **error) {
    object->vtable.method_call = cairplay_dbus_method_call;
    object->vtable.get_property = cairplay_dbus_get_property;
    object->vtable.set_property = cairplay_dbus_set_property;
    return g_dbus_connection_register_object(connection, path, info, &object->vtable, object, NULL, error);
}

/// Fails a method call with a D-Bus error name and message (g_dbus_method_invocation_return_dbus_error
/// is not variadic, but its error-name form reads clearer here).
static inline void cairplay_dbus_fail(GDBusMethodInvocation *invocation, const char *name, const char *message) {
    g_dbus_method_invocation_return_dbus_error(invocation, name, message);
}

/// Sets a GError for a refused property write.
static inline void cairplay_dbus_set_error(GError **error, const char *message) {
    g_set_error_literal(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS, message);
}
#endif
