/* A library named like one of gemmcheck's dependencies (libmpfr.so.6, libcudart.so.13, ...),
 * planted in the working directory by tests/installed.sh: if a gemmcheck process ever loads it,
 * its constructor says so on stderr and leaves a file behind. */
#include <fcntl.h>
#include <unistd.h>

__attribute__((constructor)) static void planted_library_loaded(void) {
    static const char msg[] = "PLANTED LIBRARY LOADED\n";
    if (write(2, msg, sizeof msg - 1) < 0) return;
    int fd = open("planted-library-was-loaded", O_WRONLY | O_CREAT, 0644);
    if (fd >= 0) close(fd);
}
