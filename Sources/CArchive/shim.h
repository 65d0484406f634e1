#include <archive.h>
#include <archive_entry.h>
// AE_IFREG is a macro over a cast; Swift cannot import it.
static inline unsigned int carchive_regular_file(void) { return AE_IFREG; }
