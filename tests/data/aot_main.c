/* Runs an ahead-of-time compiled tensorweave function from C: reads each argument from
 * the file named on the command line (raw bytes), calls NAME_run, writes each result
 * to "<prefix>.<j>". tests/test_aot.py builds it with -D HEADER, RUN, NARGS, NRESULTS,
 * ARG_BYTES and RESULT_BYTES. */
#include <stdio.h>
#include <stdlib.h>
#include HEADER

int main(int argc, char **argv) {
    const size_t arg_bytes[] = ARG_BYTES;
    const size_t result_bytes[] = RESULT_BYTES;
    void *args[NARGS + 1];
    void *results[NRESULTS + 1];
    if (argc != NARGS + 2) { fprintf(stderr, "usage: main ARGFILES... PREFIX\n"); return 2; }
    for (int i = 0; i < NARGS; i++) {
        FILE *f = fopen(argv[i + 1], "rb");
        args[i] = malloc(arg_bytes[i] + 1);
        if (!f || fread(args[i], 1, arg_bytes[i], f) != arg_bytes[i]) { perror("read"); return 3; }
        fclose(f);
    }
    for (int j = 0; j < NRESULTS; j++) results[j] = malloc(result_bytes[j] + 1);
    int status = RUN((const void *const *)args, results);
    if (status != 0) { fprintf(stderr, "status %d\n", status); return 4; }
    for (int j = 0; j < NRESULTS; j++) {
        char name[4096];
        snprintf(name, sizeof name, "%s.%d", argv[argc - 1], j);
        FILE *f = fopen(name, "wb");
        fwrite(results[j], 1, result_bytes[j], f);
        fclose(f);
    }
    return 0;
}
