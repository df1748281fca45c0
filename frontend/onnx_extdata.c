/* External tensor data (data_location EXTERNAL): reads bytes from a file next to the model.
 * The location is untrusted: it must be relative, free of "..", not a symlink or hardlink,
 * and resolve inside the model's folder; offset and length must fit the file and match the
 * tensor's size. The file is opened without following links and checked to be the one
 * that was inspected. Nothing is ever written. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/onnx_internal.h"

/* Parses a non-negative decimal integer without sign, spaces or overflow. */
static bool parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s) return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        unsigned digit = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - digit) / 10) return false;
        v = v * 10 + digit;
    }
    *out = v;
    return true;
}

/* True when some '/'-separated component of path is exactly "..". */
static bool has_dotdot(const char *path) {
    const char *p = path;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 2 && p[0] == '.' && p[1] == '.') return true;
        if (!end) break;
        p = end + 1;
    }
    return false;
}

/* The folder's realpath, computed once per load. */
static const char *base_real(OnnxCtx *c) {
    if (!c->base_real) c->base_real = realpath(c->base_dir, NULL);
    return c->base_real;
}

void *onnx_extdata_read(OnnxCtx *c, const Onnx__TensorProto *tp, size_t expect_bytes,
                        const char *what) {
    const char *location = NULL, *offset_s = NULL, *length_s = NULL;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        if (!e->key) continue;
        if (strcmp(e->key, "location") == 0)
            location = e->value;
        else if (strcmp(e->key, "offset") == 0)
            offset_s = e->value;
        else if (strcmp(e->key, "length") == 0)
            length_s = e->value;
    }
    if (!c->base_dir) {
        diag_error(c->d, "%s: external data is refused when loading from memory", what);
        return NULL;
    }
    if (!location || !location[0]) {
        diag_error(c->d, "%s: external data without a location", what);
        return NULL;
    }
    if (location[0] == '/' || location[0] == '\\') {
        diag_error(c->d, "%s: external data location '%s' is absolute", what, location);
        return NULL;
    }
    if (has_dotdot(location) || strchr(location, '\\')) {
        diag_error(c->d, "%s: external data location '%s' leaves the model's folder", what,
                   location);
        return NULL;
    }
    uint64_t offset = 0, length = expect_bytes;
    if (offset_s && !parse_u64(offset_s, &offset)) {
        diag_error(c->d, "%s: bad external data offset '%s'", what, offset_s);
        return NULL;
    }
    if (length_s && !parse_u64(length_s, &length)) {
        diag_error(c->d, "%s: bad external data length '%s'", what, length_s);
        return NULL;
    }
    if (length != expect_bytes) {
        diag_error(c->d, "%s: external data length %llu, expected %zu bytes", what,
                   (unsigned long long)length, expect_bytes);
        return NULL;
    }
    const char *base = base_real(c);
    if (!base) {
        diag_error(c->d, "%s: cannot resolve the model's folder '%s': %s", what, c->base_dir,
                   strerror(errno));
        return NULL;
    }
    size_t path_len = strlen(base) + 1 + strlen(location) + 1;
    char *path = ir_arena_alloc(&c->tmp, path_len);
    snprintf(path, path_len, "%s/%s", base, location);

    void *data = NULL;
    char *real = NULL;
    int fd = -1;
    struct stat ls, fs;
    if (lstat(path, &ls) != 0) {
        diag_error(c->d, "%s: external data file '%s': %s", what, location, strerror(errno));
        goto out;
    }
    if (S_ISLNK(ls.st_mode)) {
        diag_error(c->d, "%s: external data file '%s' is a symbolic link", what, location);
        goto out;
    }
    if (!S_ISREG(ls.st_mode)) {
        diag_error(c->d, "%s: external data file '%s' is not a regular file", what, location);
        goto out;
    }
    if (ls.st_nlink > 1) {
        diag_error(c->d, "%s: external data file '%s' has %llu hard links", what, location,
                   (unsigned long long)ls.st_nlink);
        goto out;
    }
    real = realpath(path, NULL);
    size_t base_len = strlen(base);
    if (!real || strncmp(real, base, base_len) != 0 ||
        (real[base_len] != '/' && !(base_len == 1 && base[0] == '/'))) {
        diag_error(c->d, "%s: external data file '%s' resolves outside the model's folder", what,
                   location);
        goto out;
    }
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &fs) != 0) {
        diag_error(c->d, "%s: cannot open external data file '%s': %s", what, location,
                   strerror(errno));
        goto out;
    }
    if (fs.st_dev != ls.st_dev || fs.st_ino != ls.st_ino || !S_ISREG(fs.st_mode)) {
        diag_error(c->d, "%s: external data file '%s' changed while loading", what, location);
        goto out;
    }
    uint64_t size = (uint64_t)fs.st_size;
    if (offset > size || length > size - offset) {
        diag_error(c->d,
                   "%s: external data offset %llu + length %llu is past the end of '%s' "
                   "(%llu bytes)",
                   what, (unsigned long long)offset, (unsigned long long)length, location,
                   (unsigned long long)size);
        goto out;
    }
    data = ir_arena_alloc(c->root->arena, expect_bytes ? expect_bytes : 1);
    size_t done = 0;
    while (done < expect_bytes) {
        ssize_t r = pread(fd, (uint8_t *)data + done, expect_bytes - done, (off_t)(offset + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            diag_error(c->d, "%s: reading external data file '%s' failed", what, location);
            data = NULL;
            goto out;
        }
        done += (size_t)r;
    }
out:
    if (fd >= 0) close(fd);
    free(real);
    return data;
}
