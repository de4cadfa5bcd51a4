// Every libmosquitto entry point the Swift code calls, defined under its own name and forwarded
// to libmosquitto.so.1, which is opened by cairplay_mosquitto_load or the first call. To call
// another libmosquitto function, add its line here (the link fails until it is added).
#include "mosquitto_shim.h"
#include "lazy_link.h"

static cairplay_lazy_library libmosquitto = CAIRPLAY_LAZY_LIBRARY("libmosquitto.so.1", "libmosquitto1");

const char *cairplay_mosquitto_load(void) { return cairplay_lazy_open(&libmosquitto); }

CAIRPLAY_LAZY_FORWARD(libmosquitto, const char *, mosquitto_connack_string, (int connack_code), (connack_code))
CAIRPLAY_LAZY_FORWARD(libmosquitto, int, mosquitto_connect_async, (struct mosquitto *mosq, const char *host, int port, int keepalive), (mosq, host, port, keepalive))
CAIRPLAY_LAZY_FORWARD_VOID(libmosquitto, mosquitto_connect_callback_set, (struct mosquitto *mosq, void (*on_connect)(struct mosquitto *, void *, int)), (mosq, on_connect))
CAIRPLAY_LAZY_FORWARD_VOID(libmosquitto, mosquitto_destroy, (struct mosquitto *mosq), (mosq))
CAIRPLAY_LAZY_FORWARD(libmosquitto, int, mosquitto_disconnect, (struct mosquitto *mosq), (mosq))
CAIRPLAY_LAZY_FORWARD_VOID(libmosquitto, mosquitto_disconnect_callback_set, (struct mosquitto *mosq, void (*on_disconnect)(struct mosquitto *, void *, int)), (mosq, on_disconnect))
CAIRPLAY_LAZY_FORWARD(libmosquitto, int, mosquitto_int_option, (struct mosquitto *mosq, enum mosq_opt_t option, int value), (mosq, option, value))
CAIRPLAY_LAZY_FORWARD(libmosquitto, int, mosquitto_lib_init, (void), ())
CAIRPLAY_LAZY_FORWARD(libmosquitto, int, mosquitto_loop_start, (struct mosquitto *mosq), (mosq))
CAIRPLAY_LAZY_FORWARD(libmosquitto, int, mosquitto_loop_stop, (struct mosquitto *mosq, _Bool force), (mosq, force))
CAIRPLAY_LAZY_FORWARD_VOID(libmosquitto, mosquitto_message_callback_set, (struct mosquitto *mosq, void (*on_message)(struct mosquitto *, void *, const struct mosquitto_message *)), (mosq, on_message))
CAIRPLAY_LAZY_FORWARD(libmosquitto, struct mosquitto *, mosquitto_new, (const char *id, _Bool clean_session, void *obj), (id, clean_session, obj))
CAIRPLAY_LAZY_FORWARD(libmosquitto, int, mosquitto_publish, (struct mosquitto *mosq, int *mid, const char *topic, int payloadlen, const void *payload, int qos, _Bool retain), (mosq, mid, topic, payloadlen, payload, qos, retain))
CAIRPLAY_LAZY_FORWARD(libmosquitto, int, mosquitto_reconnect_delay_set, (struct mosquitto *mosq, unsigned int reconnect_delay, unsigned int reconnect_delay_max, _Bool reconnect_exponential_backoff), (mosq, reconnect_delay, reconnect_delay_max, reconnect_exponential_backoff))
CAIRPLAY_LAZY_FORWARD(libmosquitto, const char *, mosquitto_strerror, (int mosq_errno), (mosq_errno))
CAIRPLAY_LAZY_FORWARD(libmosquitto, int, mosquitto_subscribe, (struct mosquitto *mosq, int *mid, const char *sub, int qos), (mosq, mid, sub, qos))
CAIRPLAY_LAZY_FORWARD(libmosquitto, int, mosquitto_tls_set, (struct mosquitto *mosq, const char *cafile, const char *capath, const char *certfile, const char *keyfile, int (*pw_callback)(char *buf, int size, int rwflag, void *userdata)), (mosq, cafile, capath, certfile, keyfile, pw_callback))
CAIRPLAY_LAZY_FORWARD_VOID(libmosquitto, mosquitto_user_data_set, (struct mosquitto *mosq, void *obj), (mosq, obj))
CAIRPLAY_LAZY_FORWARD(libmosquitto, int, mosquitto_username_pw_set, (struct mosquitto *mosq, const char *username, const char *password), (mosq, username, password))
CAIRPLAY_LAZY_FORWARD(libmosquitto, int, mosquitto_will_set, (struct mosquitto *mosq, const char *topic, int payloadlen, const void *payload, int qos, _Bool retain), (mosq, topic, payloadlen, payload, qos, retain))
