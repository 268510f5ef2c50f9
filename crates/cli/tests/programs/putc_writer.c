/* Writes SIZE bytes (a varied pattern) to stdout one character at a time: the first half with
 * putc (a call into the C library), the second with putc_unlocked, which glibc's headers
 * expand inline into the stream's buffer and a call of __overflow when it is full. The test of
 * stdio output under the page-cache budget (crates/cli/tests/cache_budget_writes.rs).
 *
 * Usage: putc_writer SIZE > FILE */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: putc_writer SIZE\n");
        return 2;
    }
    long size = atol(argv[1]);
    for (long i = 0; i < size / 2; i++)
        if (putc((int)((i * 13) % 241), stdout) == EOF)
            return 1;
    for (long i = size / 2; i < size; i++)
        if (putc_unlocked((int)((i * 13) % 241), stdout) == EOF)
            return 1;
    return fflush(stdout) == 0 ? 0 : 1;
}
