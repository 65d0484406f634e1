// zlib (Debian's zlib1g-dev): the compression ODK Collect's settings QR codes use.
#include <zlib.h>
