/* proto_status.h - the result of every decoder and encoder in protocol/.
 *
 * Decoders never abort and never read outside (ptr, len): every byte sequence
 * ends in PROTO_OK or one of these codes, with a static human-readable detail
 * string that the relay can log or send back ("detail" is never NULL after a
 * failure and never needs freeing). */
#ifndef SR_PROTO_STATUS_H
#define SR_PROTO_STATUS_H

enum proto_status {
    PROTO_OK = 0,
    PROTO_INCOMPLETE,     /* not an error: more bytes are needed */
    PROTO_UNKNOWN_TYPE,   /* well-formed message of a type we do not know: skip it */
    PROTO_ERR_SYNTAX,     /* not JSON / not MessagePack / bad framing */
    PROTO_ERR_TYPE,       /* a field has the wrong type */
    PROTO_ERR_MISSING,    /* a required field is absent */
    PROTO_ERR_VALUE,      /* a field has a value outside what the protocol allows */
    PROTO_ERR_TOO_LARGE,  /* a length exceeds the configured or protocol maximum */
    PROTO_ERR_TOO_DEEP,   /* nesting deeper than we accept */
    PROTO_ERR_UTF8,       /* malformed UTF-8 where a string is required */
    PROTO_ERR_NOMEM,      /* allocation failed */
};

struct proto_error {
    enum proto_status status;
    const char *detail;
};

/* Short stable name, e.g. "syntax", for logs and metrics. */
const char *proto_status_name(enum proto_status status);

/* True for the codes that mean "this input is bad" (not OK/INCOMPLETE/UNKNOWN_TYPE). */
static inline int proto_status_is_error(enum proto_status s)
{
    return s >= PROTO_ERR_SYNTAX;
}

/* Records the failure in *err (which may be NULL) and returns it, so that
 * decoders can write `return proto_fail(err, PROTO_ERR_TYPE, "target must be a string");`. */
static inline enum proto_status proto_fail(struct proto_error *err, enum proto_status status,
                                           const char *detail)
{
    if (err) {
        err->status = status;
        err->detail = detail;
    }
    return status;
}

#endif
