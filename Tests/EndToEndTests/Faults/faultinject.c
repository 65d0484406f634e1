/*
 * A failing disk, for one process: preloaded (LD_PRELOAD) into a `surveyd serve`, it makes a
 * chosen file-system call fail the way a broken or full disk does, while everything else passes
 * through to the C library untouched.
 *
 * The rule lives in a control file named by FAULTINJECT_CONTROL, re-read whenever the file
 * changes, so a test arms and disarms it while the server runs. One line:
 *
 *     TOKEN OP NTH COUNT ERRNO PATTERN [THREAD]
 *
 *   TOKEN    any word; a new token starts counting afresh
 *   OP       write  (write, pwrite, pwrite64)
 *            fsync  (fsync, fdatasync)
 *            rename (rename, renameat, renameat2)
 *            link   (link, linkat)
 *   NTH      the first matching call to fail (1: the first one after arming)
 *   COUNT    how many matching calls fail from there (0: every one)
 *   ERRNO    EIO or ENOSPC
 *   PATTERN  the path acted on, '*' standing for any run of characters ('/' included); a call
 *            on a descriptor is matched by the descriptor's path (/proc/self/fd), a rename or
 *            a link by either of its paths
 *   THREAD   if given, only calls made by the thread of this name count (its name as
 *            prctl(PR_GET_NAME) reads it, at most 15 characters)
 *
 * No file (or an unreadable line): nothing fails. Each failure is appended to the file
 * CONTROL.fired as "TOKEN FUNCTION THREAD PATH", so a test can tell where its fault struck.
 *
 * Decisions are taken under one mutex; the control file is read into a fixed buffer and
 * nothing is allocated. errno is left as the C library set it, except on an injected failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

enum op { OP_NONE, OP_WRITE, OP_FSYNC, OP_RENAME, OP_LINK };

struct rule {
    char token[64];
    enum op op;
    long nth;
    long count;
    int err;
    char pattern[PATH_MAX];
    char thread[16];    /* empty: any thread */
};

static struct {
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*pwrite)(int, const void *, size_t, off_t);
    ssize_t (*pwrite64)(int, const void *, size_t, off64_t);
    int (*fsync)(int);
    int (*fdatasync)(int);
    int (*rename)(const char *, const char *);
    int (*renameat)(int, const char *, int, const char *);
    int (*renameat2)(int, const char *, int, const char *, unsigned int);
    int (*link)(const char *, const char *);
    int (*linkat)(int, const char *, int, const char *, int);
} real;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char control[PATH_MAX];  /* empty: never armed */
static char fired[PATH_MAX];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Guarded by `lock`: */
static struct rule rule;
static struct stat loaded;      /* the control file as last read */
static long matched;            /* matching calls since the token changed */

static void resolve(void) {
    real.write = dlsym(RTLD_NEXT, "write");
    real.pwrite = dlsym(RTLD_NEXT, "pwrite");
    real.pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
    real.fsync = dlsym(RTLD_NEXT, "fsync");
    real.fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real.rename = dlsym(RTLD_NEXT, "rename");
    real.renameat = dlsym(RTLD_NEXT, "renameat");
    real.renameat2 = dlsym(RTLD_NEXT, "renameat2");
    real.link = dlsym(RTLD_NEXT, "link");
    real.linkat = dlsym(RTLD_NEXT, "linkat");
    const char *path = getenv("FAULTINJECT_CONTROL");
    if (path && path[0] && strlen(path) + sizeof ".fired" <= sizeof fired) {
        strcpy(control, path);
        strcpy(fired, path);
        strcat(fired, ".fired");
    }
}

__attribute__((constructor)) static void load(void) { pthread_once(&once, resolve); }

/* '*' matches any run of characters; everything else itself. */
static int matches(const char *pattern, const char *s) {
    const char *star = NULL, *resume = NULL;
    while (*s) {
        if (*pattern == '*') {
            star = pattern++;
            resume = s;
        } else if (*pattern == *s) {
            pattern++;
            s++;
        } else if (star) {
            pattern = star + 1;
            s = ++resume;
        } else {
            return 0;
        }
    }
    while (*pattern == '*') pattern++;
    return *pattern == '\0';
}

static int same_file(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Under `lock`: reads the control file again if it is not the one last read. */
static void reload(const struct stat *now) {
    if (same_file(now, &loaded)) return;
    loaded = *now;
    char text[sizeof rule.pattern + 256];
    int fd = open(control, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
    if (fd >= 0) close(fd);
    struct rule next = {.op = OP_NONE};
    char op[16], err[16];
    if (n > 0) {
        text[n] = '\0';
        int fields = sscanf(text, "%63s %15s %ld %ld %15s %4095s %15s", next.token, op, &next.nth, &next.count, err,
                            next.pattern, next.thread);
        if (fields != 7) next.thread[0] = '\0';
        if (fields >= 6) {
            next.op = !strcmp(op, "write") ? OP_WRITE : !strcmp(op, "fsync") ? OP_FSYNC
                    : !strcmp(op, "rename") ? OP_RENAME : !strcmp(op, "link") ? OP_LINK : OP_NONE;
            next.err = !strcmp(err, "EIO") ? EIO : !strcmp(err, "ENOSPC") ? ENOSPC : 0;
            if (next.err == 0 || next.nth < 1 || next.count < 0) next.op = OP_NONE;
        }
    }
    if (strcmp(next.token, rule.token) != 0) matched = 0;
    rule = next;
}

/* `path` made absolute against `dirfd` (AT_FDCWD: the working directory) into `out`. */
static const char *absolute(int dirfd, const char *path, char *out, size_t size) {
    if (!path || path[0] == '/') return path;
    char dir[PATH_MAX];
    if (dirfd == AT_FDCWD) {
        if (!getcwd(dir, sizeof dir)) return path;
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        ssize_t n = readlink(link, dir, sizeof dir - 1);
        if (n < 0) return path;
        dir[n] = '\0';
    }
    int n = snprintf(out, size, "%s/%s", dir, path);
    return n >= 0 && (size_t)n < size ? out : path;
}

/* Under `lock`: appends "TOKEN FUNCTION THREAD PATH" to the fired log, through the real write
 * (THREAD: the calling thread's name, spaces as '_', '-' when it has none). */
static void note(const char *function, const char *path) {
    char name[16] = "";
    prctl(PR_GET_NAME, name, 0, 0, 0);
    for (char *c = name; *c; c++) if (*c == ' ') *c = '_';
    char line[PATH_MAX + 128];
    int n = snprintf(line, sizeof line, "%s %s %s %s\n", rule.token, function, name[0] ? name : "-", path);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = sizeof line - 1;
    int fd = open(fired, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    real.write(fd, line, (size_t)n);
    close(fd);
}

/*
 * Whether this call fails, and with which errno (0: it goes through). A call on a descriptor
 * passes `fd` (its path is looked up only when the armed operation is this one); a call on
 * names passes them with their directories.
 */
static int fault(enum op op, const char *function, int fd, int dir1, const char *path1, int dir2, const char *path2) {
    pthread_once(&once, resolve);
    if (!control[0]) return 0;
    int saved = errno;
    int err = 0;
    struct stat now;
    if (stat(control, &now) == 0) {
        pthread_mutex_lock(&lock);
        reload(&now);
        char name[16] = "";
        if (rule.thread[0]) prctl(PR_GET_NAME, name, 0, 0, 0);
        if (rule.op == op && (!rule.thread[0] || strcmp(name, rule.thread) == 0)) {
            char buf1[PATH_MAX], buf2[PATH_MAX];
            const char *a = NULL, *b = NULL;
            if (fd >= 0) {
                char link[64];
                snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
                ssize_t n = readlink(link, buf1, sizeof buf1 - 1);
                if (n >= 0) {
                    buf1[n] = '\0';
                    a = buf1;
                }
            } else {
                a = absolute(dir1, path1, buf1, sizeof buf1);
                b = absolute(dir2, path2, buf2, sizeof buf2);
            }
            const char *hit = a && matches(rule.pattern, a) ? a : b && matches(rule.pattern, b) ? b : NULL;
            if (hit) {
                matched++;
                if (matched >= rule.nth && (rule.count == 0 || matched < rule.nth + rule.count)) {
                    err = rule.err;
                    note(function, hit);
                }
            }
        }
        pthread_mutex_unlock(&lock);
    }
    errno = saved;
    return err;
}

#define FAIL_WITH(e) do { errno = (e); return -1; } while (0)

ssize_t write(int fd, const void *buf, size_t n) {
    int e = fault(OP_WRITE, "write", fd, AT_FDCWD, NULL, AT_FDCWD, NULL);
    if (e) FAIL_WITH(e);
    return real.write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t offset) {
    int e = fault(OP_WRITE, "pwrite", fd, AT_FDCWD, NULL, AT_FDCWD, NULL);
    if (e) FAIL_WITH(e);
    return real.pwrite(fd, buf, n, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t offset) {
    int e = fault(OP_WRITE, "pwrite64", fd, AT_FDCWD, NULL, AT_FDCWD, NULL);
    if (e) FAIL_WITH(e);
    return real.pwrite64(fd, buf, n, offset);
}

int fsync(int fd) {
    int e = fault(OP_FSYNC, "fsync", fd, AT_FDCWD, NULL, AT_FDCWD, NULL);
    if (e) FAIL_WITH(e);
    return real.fsync(fd);
}

int fdatasync(int fd) {
    int e = fault(OP_FSYNC, "fdatasync", fd, AT_FDCWD, NULL, AT_FDCWD, NULL);
    if (e) FAIL_WITH(e);
    return real.fdatasync(fd);
}

int rename(const char *from, const char *to) {
    int e = fault(OP_RENAME, "rename", -1, AT_FDCWD, from, AT_FDCWD, to);
    if (e) FAIL_WITH(e);
    return real.rename(from, to);
}

int renameat(int fromdir, const char *from, int todir, const char *to) {
    int e = fault(OP_RENAME, "renameat", -1, fromdir, from, todir, to);
    if (e) FAIL_WITH(e);
    return real.renameat(fromdir, from, todir, to);
}

int renameat2(int fromdir, const char *from, int todir, const char *to, unsigned int flags) {
    int e = fault(OP_RENAME, "renameat2", -1, fromdir, from, todir, to);
    if (e) FAIL_WITH(e);
    return real.renameat2(fromdir, from, todir, to, flags);
}

int link(const char *from, const char *to) {
    int e = fault(OP_LINK, "link", -1, AT_FDCWD, from, AT_FDCWD, to);
    if (e) FAIL_WITH(e);
    return real.link(from, to);
}

int linkat(int fromdir, const char *from, int todir, const char *to, int flags) {
    int e = fault(OP_LINK, "linkat", -1, fromdir, from, todir, to);
    if (e) FAIL_WITH(e);
    return real.linkat(fromdir, from, todir, to, flags);
}
