/* libaudiosession: an application's AVAudioSession-style audio session in recd, for C and C++.
 * The same calls as the Swift AudioSession library (docs/audiosession.md).
 *
 *   cc app.c $(pkg-config --cflags --libs audiosession) -ljack
 *
 * A C library (libc, libpthread and libjansson; nothing else): it exports these functions only.
 * Every call may be made from any thread. Callbacks run on the library's own thread (one
 * per session, named "audiosession"), one at a time, in the order recd sent the events; a
 * callback may call the session's functions. Never from JACK's process thread.
 * Calls return AS_OK (0) or the AVAudioSession error code of recd's SPEC §2 (as_status);
 * as_last_error_message() says what was wrong and what to do.
 *
 * Arguments are checked, never trusted: a NULL, freed or unknown session handle, a NULL
 * where a string or result pointer is required, a port list that is NULL with a count above
 * 0, holds a NULL entry or has more than 256 entries: each is AS_ERROR_BAD_PARAM with a
 * message (as_last_error_message(NULL) for the calls that had no live session). Freeing a
 * session twice does nothing the second time. */
#ifndef AUDIOSESSION_H
#define AUDIOSESSION_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct as_session as_session;
typedef int32_t as_status;

/* Error codes (AVAudioSession.ErrorCode values). */
#define AS_OK 0
#define AS_ERROR_BAD_PARAM (-50)
#define AS_ERROR_IS_BUSY 560030580                 /* '!act' */
#define AS_ERROR_INCOMPATIBLE_CATEGORY 560161140   /* '!cat' */
#define AS_ERROR_CANNOT_INTERRUPT_OTHERS 560557684 /* '!int' */
#define AS_ERROR_CANNOT_START_PLAYING 561015905    /* '!pla' */
#define AS_ERROR_CANNOT_START_RECORDING 561145187  /* '!rec' */
#define AS_ERROR_INSUFFICIENT_PRIORITY 561017449   /* '!pri' */
#define AS_ERROR_RESOURCE_NOT_AVAILABLE 561145203  /* '!res' */
#define AS_ERROR_SESSION_NOT_ACTIVE 1768841571     /* 'inac' */
#define AS_ERROR_EXPIRED_SESSION 561210739         /* '!ses' */
#define AS_ERROR_MISSING_ENTITLEMENT 1701737535     /* 'ent?' */
#define AS_ERROR_MEDIA_SERVICES_FAILED 1836282486  /* 'msrv': recd (or JACK) is not there */
#define AS_ERROR_NOT_SESSION_OWNER 560953198       /* '!own' (recd's own) */
#define AS_ERROR_NOT_ADMINISTRATOR 560030829       /* '!adm' (recd's own) */
#define AS_ERROR_UNSPECIFIED 2003329396            /* 'what' */

/* Category options (AVAudioSession.CategoryOptions values), or-ed together. */
#define AS_OPTION_MIX_WITH_OTHERS 0x1
#define AS_OPTION_DUCK_OTHERS 0x2
#define AS_OPTION_ALLOW_BLUETOOTH_HFP 0x4
#define AS_OPTION_DEFAULT_TO_SPEAKER 0x8
#define AS_OPTION_INTERRUPT_SPOKEN_AUDIO_AND_MIX_WITH_OTHERS 0x11
#define AS_OPTION_ALLOW_BLUETOOTH_A2DP 0x20
#define AS_OPTION_ALLOW_AIRPLAY 0x40
#define AS_OPTION_OVERRIDE_MUTED_MICROPHONE_INTERRUPTION 0x80
#define AS_OPTION_BLUETOOTH_HIGH_QUALITY_RECORDING (1u << 19)

/* as_set_active options. */
#define AS_SET_ACTIVE_NOTIFY_OTHERS_ON_DEACTIVATION 1

/* Record permission (AVAudioSession.RecordPermission values). */
#define AS_RECORD_PERMISSION_UNDETERMINED 1970168948 /* 'undt' */
#define AS_RECORD_PERMISSION_DENIED 1684369017       /* 'deny' */
#define AS_RECORD_PERMISSION_GRANTED 1735552628      /* 'grnt' */

/* Notification values (upstream). */
#define AS_INTERRUPTION_TYPE_ENDED 0
#define AS_INTERRUPTION_TYPE_BEGAN 1
#define AS_INTERRUPTION_OPTION_SHOULD_RESUME 1
#define AS_INTERRUPTION_REASON_DEFAULT 0
#define AS_INTERRUPTION_REASON_BUILT_IN_MIC_MUTED 2
#define AS_INTERRUPTION_REASON_ROUTE_DISCONNECTED 4
#define AS_ROUTE_CHANGE_UNKNOWN 0
#define AS_ROUTE_CHANGE_NEW_DEVICE_AVAILABLE 1
#define AS_ROUTE_CHANGE_OLD_DEVICE_UNAVAILABLE 2
#define AS_ROUTE_CHANGE_CATEGORY_CHANGE 3
#define AS_ROUTE_CHANGE_OVERRIDE 4
#define AS_ROUTE_CHANGE_WAKE_FROM_SLEEP 6
#define AS_ROUTE_CHANGE_NO_SUITABLE_ROUTE_FOR_CATEGORY 7
#define AS_ROUTE_CHANGE_ROUTE_CONFIGURATION_CHANGE 8
#define AS_SILENCE_SECONDARY_AUDIO_HINT_END 0
#define AS_SILENCE_SECONDARY_AUDIO_HINT_BEGIN 1

/* Opens app's session on recd's socket: RECD_SOCKET, else recd's default (socket_path NULL).
 * mic_usage (may be NULL) is the microphone usage description input categories need.
 * NULL only when app is NULL or empty; recd need not run yet (calls then fail with
 * AS_ERROR_MEDIA_SERVICES_FAILED). Activations through it are held by this process: when the
 * process ends (exit, crash, SIGKILL), recd deactivates the session as with notify-others. */
as_session *as_session_new(const char *app, const char *socket_path, const char *mic_usage);
/* Closes the connections (attachments end) and the thread; no callback runs after it returns. */
void as_session_free(as_session *session);

/* The message of the last failed call on this session (any thread), valid until the next one;
 * "no error" before the first. recd words what to do in this library's terms ("pass a
 * microphone usage description to as_session_new"). */
const char *as_last_error_message(as_session *session);

/* The names of the values above, as recd and recctl print them; each a static string, "unknown"
 * for a value the library does not know (a newer recd may send one). */
/* An error code: "badParam", "mediaServicesFailed", ... */
const char *as_error_name(as_status code);
/* One AS_OPTION_*: "mixWithOthers", "allowBluetoothHFP", ... (not an or-ed set). */
const char *as_category_option_name(uint64_t option);
/* AS_SET_ACTIVE_NOTIFY_OTHERS_ON_DEACTIVATION: "notifyOthersOnDeactivation". */
const char *as_set_active_option_name(uint32_t option);
/* AS_RECORD_PERMISSION_*: "undetermined", "denied", "granted". */
const char *as_record_permission_name(int32_t permission);
/* AS_INTERRUPTION_TYPE_*: "began", "ended". */
const char *as_interruption_type_name(uint32_t type);
/* An interruption callback's options: "shouldResume", or "none" for 0. */
const char *as_interruption_options_name(uint32_t options);
/* AS_INTERRUPTION_REASON_*: "default", "builtInMicMuted", "routeDisconnected". */
const char *as_interruption_reason_name(uint32_t reason);
/* AS_ROUTE_CHANGE_*: "newDeviceAvailable", "oldDeviceUnavailable", ... ("unknown" is also 0's). */
const char *as_route_change_reason_name(uint32_t reason);
/* AS_SILENCE_SECONDARY_AUDIO_HINT_*: "begin", "end". */
const char *as_silence_secondary_audio_hint_name(uint32_t type);

/* category and mode are the wire names ("playback", "default"; mode NULL: default);
 * options AS_OPTION_* or-ed; policy NULL: "default". recd adds the options a choice implies
 * (docs/protocol.md, "Implied options"): category ambient, duckOthers and
 * interruptSpokenAudioAndMixWithOthers add mixWithOthers; mode voiceChat adds allowBluetoothHFP,
 * videoChat allowBluetoothHFP and defaultToSpeaker. */
as_status as_set_category(as_session *session, const char *category, const char *mode, uint64_t options,
                          const char *policy);
as_status as_set_active(as_session *session, int active, uint32_t options);
as_status as_set_preferred_input(as_session *session, const char *port_or_null);
/* AVAudioSession's setPrefersNoInterruptionsFromSystemAlerts: prefers 1, and system-alert-class
 * sessions (non-mixable playback in mode voicePrompt, priority normal) no longer interrupt this
 * one; higher-priority sessions still do. prefers other than 0 or 1: AS_ERROR_BAD_PARAM. */
as_status as_set_prefers_no_interruptions_from_system_alerts(as_session *session, int prefers);
/* *prefers gets 1 or 0 (as recd has it now). */
as_status as_prefers_no_interruptions_from_system_alerts(as_session *session, int32_t *prefers);
/* AVAudioSession's setPrefersEchoCancelledInput (iOS 18.2): prefers 1, and the session's
 * recordings are echo-cancelled against its own output (no noise suppression or gain control:
 * voiceChat has those) while echo-cancelled input is available. A category other than
 * playAndRecord: AS_ERROR_INCOMPATIBLE_CATEGORY; prefers other than 0 or 1: AS_ERROR_BAD_PARAM. */
as_status as_set_prefers_echo_cancelled_input(as_session *session, int prefers);
/* *prefers gets 1 or 0 (as recd has it now). */
as_status as_prefers_echo_cancelled_input(as_session *session, int32_t *prefers);
/* AVAudioSession's isEchoCancelledInputAvailable: *available gets 1 for playAndRecord, not in
 * mode measurement, on a route with an input and an output; else 0. */
as_status as_is_echo_cancelled_input_available(as_session *session, int32_t *available);
/* speaker: 1 to override to the speaker, 0 for none. */
as_status as_override_output_audio_port(as_session *session, int speaker);

/* *permission gets AS_RECORD_PERMISSION_*. */
as_status as_record_permission(as_session *session, int32_t *permission);
/* Asks and waits until decided (an administrator: `recctl permission grant|deny APP`). */
as_status as_request_record_permission_wait(as_session *session, int32_t *permission);
/* Asks without waiting: callback(granted, user) runs once, on a library thread. */
as_status as_request_record_permission(as_session *session, void (*callback)(int granted, void *user), void *user);

as_status as_is_other_audio_playing(as_session *session, int *playing);
as_status as_secondary_audio_should_be_silenced_hint(as_session *session, int *hint);
/* The current route as JSON ({"inputs":[{"name","type","channels"}],"outputs":[...]}) and the
 * available inputs as a JSON list; free the string with as_free. NULL on failure. */
char *as_copy_current_route_json(as_session *session);
char *as_copy_available_inputs_json(as_session *session);
void as_free(void *pointer);

/* Puts the JACK client's ports under the session (recd's session.attach): play_ports are its
 * output ports ("client:out_1"), capture_ports its input ports; either may be NULL/0. */
as_status as_attach(as_session *session, const char *jack_client, const char *const *play_ports, size_t play_count,
                    const char *const *capture_ports, size_t capture_count);
as_status as_detach(as_session *session, const char *jack_client);

/* Callbacks (NULL removes one). They run on the session's thread. Their codes are the
 * AS_INTERRUPTION_*, AS_ROUTE_CHANGE_* and AS_SILENCE_SECONDARY_AUDIO_HINT_* values; the
 * as_*_name functions above name them. */
as_status as_set_interruption_callback(as_session *session,
                                       void (*callback)(uint32_t type, uint32_t options, uint32_t reason, void *user),
                                       void *user);
/* previous_route_json: the route before ({"inputs":[...],"outputs":[...]}), valid during the call. */
as_status as_set_route_change_callback(as_session *session,
                                       void (*callback)(uint32_t reason, const char *previous_route_json, void *user),
                                       void *user);
/* reset 0: media services were lost; 1: they were reset (configuration applied again). */
as_status as_set_media_services_callback(as_session *session, void (*callback)(int reset, void *user), void *user);
as_status as_set_silence_secondary_audio_hint_callback(as_session *session, void (*callback)(uint32_t type, void *user),
                                                       void *user);
as_status as_set_input_mute_callback(as_session *session, void (*callback)(int muted, void *user), void *user);

#ifdef __cplusplus
}
#endif
#endif
