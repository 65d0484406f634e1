#include <sqlite3.h>
// SQLITE_TRANSIENT is a macro casting -1 to a function pointer; Swift cannot import it.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }
// Before the first connection: no global memory statistics, whose mutex every allocation of
// every connection would otherwise take (the readers on the HTTP threads and the writer contend
// on it). sqlite3_config is variadic; Swift cannot call it.
static inline int csqlite_configure(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }
