/* proto_status.c - names for protocol result codes. */
#include "protocol/proto_status.h"

const char *proto_status_name(enum proto_status status)
{
    switch (status) {
    case PROTO_OK: return "ok";
    case PROTO_INCOMPLETE: return "incomplete";
    case PROTO_UNKNOWN_TYPE: return "unknown-type";
    case PROTO_ERR_SYNTAX: return "syntax";
    case PROTO_ERR_TYPE: return "type";
    case PROTO_ERR_MISSING: return "missing";
    case PROTO_ERR_VALUE: return "value";
    case PROTO_ERR_TOO_LARGE: return "too-large";
    case PROTO_ERR_TOO_DEEP: return "too-deep";
    case PROTO_ERR_UTF8: return "utf8";
    case PROTO_ERR_NOMEM: return "nomem";
    }
    return "invalid-status";
}
