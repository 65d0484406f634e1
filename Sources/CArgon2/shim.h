// Argon2id (the reference implementation, Debian's libargon2) for console passwords.
#include <argon2.h>
