#ifndef CAIRPLAY_GLIB_LAZY_H
#define CAIRPLAY_GLIB_LAZY_H
// GLib, GObject, GIO and GStreamer opened on the first call rather than at exec
// (glib_forwarders.c). Their types and macros come from their headers through CGio and
// CGStreamer, which Swift imports; this module only supplies the entry points, so a box that
// plays AirPlay audio to a file, or idles, never maps them (about 2.7 MiB resident with the
// libraries they pull in: libdw, libmount, libselinux, libpcre2, libffi and others).
//
// To call another GLib or GStreamer function from Swift, add its line to glib_forwarders.c:
// the link fails until it is added, and the compiler checks the line against the header.
#endif
