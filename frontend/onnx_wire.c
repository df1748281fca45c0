/* A small walker over the protobuf wire format, driven by protobuf-c's own descriptors,
 * that runs before protobuf-c unpacks a model. protobuf-c recurses once per nested
 * message, so an untrusted file of deeply nested graphs could overflow the stack; this
 * walker bounds the depth (its own recursion is bounded by the same limit) and refuses
 * truncated fields, groups and message fields sent with a non-length wire type. It also
 * refuses string fields that hold a NUL byte: protobuf-c hands strings on as C strings, so
 * "Conv\0junk" would read as "Conv" and "\0" as an absent name. doc_string is exempt (Kiln
 * never reads it, and a NUL there changes nothing). And it counts the NodeProto messages
 * (in every graph and function) against ONNX_MAX_NODES, before protobuf-c spends a
 * kilobyte or more of memory on each. */
#include <string.h>

#include "frontend/onnx_internal.h"

enum {
    WIRE_VARINT = 0,
    WIRE_FIXED64 = 1,
    WIRE_LEN = 2,
    WIRE_GROUP_START = 3,
    WIRE_GROUP_END = 4,
    WIRE_FIXED32 = 5,
};
#define WIRE_VARINT_MAX_BYTES 10 /* a 64-bit varint takes at most 10 bytes */

/* Reads a varint at *pos; false when truncated or longer than 10 bytes. */
static bool read_varint(const uint8_t *buf, size_t len, size_t *pos, uint64_t *out) {
    uint64_t v = 0;
    for (int i = 0; i < WIRE_VARINT_MAX_BYTES; i++) {
        if (*pos >= len) return false;
        uint8_t b = buf[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

typedef struct WireCtx {
    int max_depth;
    uint64_t n_nodes; /* NodeProto messages seen */
    Diag *d;
} WireCtx;

static bool walk(const uint8_t *buf, size_t len, const ProtobufCMessageDescriptor *desc, int depth,
                 WireCtx *w) {
    Diag *d = w->d;
    int max_depth = w->max_depth;
    if (depth > max_depth) {
        diag_error(d, "model is nested deeper than %d messages (at %s)", max_depth, desc->name);
        return false;
    }
    size_t pos = 0;
    while (pos < len) {
        uint64_t key;
        if (!read_varint(buf, len, &pos, &key)) {
            diag_error(d, "truncated field key in %s", desc->name);
            return false;
        }
        unsigned wire = (unsigned)(key & 7);
        uint64_t number = key >> 3;
        const ProtobufCFieldDescriptor *f = NULL;
        if (number > 0 && number <= UINT32_MAX)
            f = protobuf_c_message_descriptor_get_field(desc, (unsigned)number);
        if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && wire != WIRE_LEN) {
            diag_error(d, "field %s.%s has wire type %u, expected a length-delimited message",
                       desc->name, f->name, wire);
            return false;
        }
        uint64_t skip;
        switch (wire) {
        case WIRE_VARINT:
            if (!read_varint(buf, len, &pos, &skip)) {
                diag_error(d, "truncated varint in %s", desc->name);
                return false;
            }
            continue;
        case WIRE_FIXED64:
            skip = 8;
            break;
        case WIRE_FIXED32:
            skip = 4;
            break;
        case WIRE_LEN:
            if (!read_varint(buf, len, &pos, &skip)) {
                diag_error(d, "truncated length in %s", desc->name);
                return false;
            }
            break;
        default:
            diag_error(d, "unsupported wire type %u (field %llu) in %s", wire,
                       (unsigned long long)number, desc->name);
            return false;
        }
        if (skip > len - pos) {
            diag_error(d, "truncated field %llu in %s: %llu bytes past the end",
                       (unsigned long long)number, desc->name,
                       (unsigned long long)(skip - (len - pos)));
            return false;
        }
        const uint8_t *nul = f && f->type == PROTOBUF_C_TYPE_STRING &&
                                     strcmp(f->name, "doc_string") != 0
                                 ? memchr(buf + pos, 0, (size_t)skip)
                                 : NULL;
        if (nul) {
            diag_error(d, "string field %s.%s holds a NUL byte (byte %zu of %llu)", desc->name,
                       f->name, (size_t)(nul - (buf + pos)), (unsigned long long)skip);
            return false;
        }
        if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && f->descriptor) {
            if (f->descriptor == &onnx__node_proto__descriptor &&
                ++w->n_nodes > ONNX_MAX_NODES) {
                diag_error(d, "model has more than %u nodes (at byte %zu of a %s)",
                           ONNX_MAX_NODES, pos, desc->name);
                return false;
            }
            if (!walk(buf + pos, (size_t)skip, f->descriptor, depth + 1, w)) return false;
        }
        pos += (size_t)skip;
    }
    return true;
}

bool onnx_wire_check(const uint8_t *buf, size_t len, const ProtobufCMessageDescriptor *desc,
                     int max_depth, Diag *d) {
    WireCtx w = {max_depth, 0, d};
    return walk(buf, len, desc, 0, &w);
}
