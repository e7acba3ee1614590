/* replay_main.c - runs a fuzz target over every file of a corpus directory.
 *
 * Linked with each tests/fuzz/fuzz_*.c when libFuzzer is not in use, so the
 * ordinary (gcc, ASan/UBSan) test build replays the whole corpus and every
 * crash input ever saved under fixtures/fuzz/<target>/ as a regression test. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
    size_t got = data ? fread(data, 1, (size_t)size, f) : 0;
    fclose(f);
    if (!data || got != (size_t)size) {
        free(data);
        fprintf(stderr, "cannot read %s\n", path);
        return -1;
    }
    LLVMFuzzerTestOneInput(data, got);
    free(data);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    DIR *dir = opendir(argv[1]);
    if (!dir) {
        fprintf(stderr, "no corpus directory %s\n", argv[1]);
        return 1;
    }
    int files = 0, failures = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (replay_file(path) != 0)
            failures++;
        files++;
    }
    closedir(dir);
    printf("replayed %d corpus files from %s\n", files, argv[1]);
    if (files == 0) {
        fprintf(stderr, "corpus %s is empty\n", argv[1]);
        return 1;
    }
    return failures ? 1 : 0;
}
