#ifndef RECD_CSQLITE_SHIM_H
#define RECD_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro casting -1 to a function pointer; Swift cannot import it.
static inline sqlite3_destructor_type recd_sqlite_transient(void) { return SQLITE_TRANSIENT; }

/// sqlite3_db_config is variadic; Swift cannot call it. Turns one boolean option on or off
/// (SQLITE_DBCONFIG_DEFENSIVE and the like).
static inline int recd_sqlite_db_config_flag(sqlite3 *db, int option, int on) {
    return sqlite3_db_config(db, option, on, (int *)0);
}
#endif
