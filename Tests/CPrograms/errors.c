/* The messages libaudiosession passes on for two mistakes a C developer makes first, one line
 * each ("NAME: MESSAGE"): activating an input category without a microphone usage description,
 * and activating a session that was never configured.
 *   ./errors APP     (socket: RECD_SOCKET) */
#include <audiosession.h>
#include <stdio.h>

int main(int argc, char **argv) {
    const char *app = argc > 1 ? argv[1] : "errors";
    as_session *session = as_session_new(app, NULL, NULL); /* no microphone usage description */
    as_status status = as_set_active(session, 1, 0);     /* before any as_set_category */
    printf("unconfigured %s: %s\n", as_error_name(status), as_last_error_message(session));
    status = as_set_category(session, "record", NULL, 0, NULL);
    if (status == AS_OK) status = as_set_active(session, 1, 0);
    printf("no mic usage %s: %s\n", as_error_name(status), as_last_error_message(session));
    as_session_free(session);
    return 0;
}
