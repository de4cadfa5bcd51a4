#ifndef CMOSQUITTO_SHIM_H
#define CMOSQUITTO_SHIM_H
// libmosquitto's types and constants come from its header; its code (with the libssl and
// libcrypto it needs) is loaded when an MQTT broker is configured (mosquitto_forwarders.c).
#include <mosquitto.h>

/// Loads libmosquitto.so.1 now. NULL when it is loaded, else why not: call it before the first
/// libmosquitto call, so a missing library is an MQTT error rather than an abort.
const char *cairplay_mosquitto_load(void);
#endif
