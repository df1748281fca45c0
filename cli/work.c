/* Helpers of the commands that build and run bundles in a scratch folder (kiln calibrate,
 * kiln validate --int8 --per-layer): paths, a child process with its output in a log, and
 * removing the folder afterwards. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

extern char **environ;

char *cli_cat3(const char *a, const char *b, const char *c) {
    size_t na = strlen(a), nb = strlen(b), nc = strlen(c);
    char *s = malloc(na + nb + nc + 1);
    if (s) memcpy(s, a, na), memcpy(s + na, b, nb), memcpy(s + na + nb, c, nc + 1);
    return s;
}

int cli_run_logged(char *const argv[], const char *log) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err) {
        errno = err;
        return -1;
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

void cli_remove_work(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char *p = cli_cat3(dir, "/", e->d_name);
        struct stat st;
        if (p && lstat(p, &st) == 0) {
            if (S_ISDIR(st.st_mode)) cli_remove_work(p);
            else remove(p);
        }
        free(p);
    }
    closedir(d);
    rmdir(dir);
}
