/* The names of the header's values, as recd, recctl and the Swift library spell them (the
 * SessionPolicy types' names; LibraryNamesTests compares the two). Each function returns a
 * static string, "unknown" for a value it does not know. */
#include "internal.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct asi_name {
    long long value;
    const char *name;
};

static const char *lookup(const struct asi_name *names, size_t count, long long value) {
    for (size_t i = 0; i < count; i++)
        if (names[i].value == value) return names[i].name;
    return "unknown";
}

#define LOOKUP(table, value) lookup(table, sizeof table / sizeof table[0], value)

static const struct asi_name errors[] = {
    {AS_OK, "ok"},
    {AS_ERROR_BAD_PARAM, "badParam"},
    {AS_ERROR_IS_BUSY, "isBusy"},
    {AS_ERROR_INCOMPATIBLE_CATEGORY, "incompatibleCategory"},
    {AS_ERROR_CANNOT_INTERRUPT_OTHERS, "cannotInterruptOthers"},
    {AS_ERROR_CANNOT_START_PLAYING, "cannotStartPlaying"},
    {AS_ERROR_CANNOT_START_RECORDING, "cannotStartRecording"},
    {AS_ERROR_INSUFFICIENT_PRIORITY, "insufficientPriority"},
    {AS_ERROR_RESOURCE_NOT_AVAILABLE, "resourceNotAvailable"},
    {AS_ERROR_SESSION_NOT_ACTIVE, "sessionNotActive"},
    {AS_ERROR_EXPIRED_SESSION, "expiredSession"},
    {AS_ERROR_MISSING_ENTITLEMENT, "missingEntitlement"},
    {AS_ERROR_MEDIA_SERVICES_FAILED, "mediaServicesFailed"},
    {AS_ERROR_NOT_SESSION_OWNER, "notSessionOwner"},
    {AS_ERROR_NOT_ADMINISTRATOR, "notAdministrator"},
    {AS_ERROR_UNSPECIFIED, "unspecified"},
};

const char *as_error_name(as_status code) { return LOOKUP(errors, code); }

as_status asi_error_code(const json_t *error) {
    long long code;
    if (asi_integer(error, "code", &code))
        for (size_t i = 1; i < sizeof errors / sizeof errors[0]; i++)
            if (errors[i].value == code) return (as_status)code;
    const char *name = asi_string(error, "name");
    if (name)
        for (size_t i = 1; i < sizeof errors / sizeof errors[0]; i++)
            if (strcmp(errors[i].name, name) == 0) return (as_status)errors[i].value;
    return AS_ERROR_UNSPECIFIED;
}

/* In AVAudioSession's order, which is also the wire's (session.set's "options"). */
static const struct asi_name category_options[] = {
    {AS_OPTION_MIX_WITH_OTHERS, "mixWithOthers"},
    {AS_OPTION_DUCK_OTHERS, "duckOthers"},
    {AS_OPTION_ALLOW_BLUETOOTH_HFP, "allowBluetoothHFP"},
    {AS_OPTION_DEFAULT_TO_SPEAKER, "defaultToSpeaker"},
    {AS_OPTION_INTERRUPT_SPOKEN_AUDIO_AND_MIX_WITH_OTHERS, "interruptSpokenAudioAndMixWithOthers"},
    {AS_OPTION_ALLOW_BLUETOOTH_A2DP, "allowBluetoothA2DP"},
    {AS_OPTION_ALLOW_AIRPLAY, "allowAirPlay"},
    {AS_OPTION_OVERRIDE_MUTED_MICROPHONE_INTERRUPTION, "overrideMutedMicrophoneInterruption"},
    {AS_OPTION_BLUETOOTH_HIGH_QUALITY_RECORDING, "bluetoothHighQualityRecording"},
};

const char *as_category_option_name(uint64_t option) {
    return option > INT64_MAX ? "unknown" : LOOKUP(category_options, (long long)option);
}

json_t *asi_option_names(uint64_t chosen) {
    json_t *names = json_array();
    /* An option is chosen when all its bits are: 0x11 holds mixWithOthers too. */
    for (size_t i = 0; i < sizeof category_options / sizeof category_options[0]; i++) {
        uint64_t bits = (uint64_t)category_options[i].value;
        if ((chosen & bits) == bits) json_array_append_new(names, json_string(category_options[i].name));
    }
    return names;
}

static const struct asi_name set_active_options[] = {
    {AS_SET_ACTIVE_NOTIFY_OTHERS_ON_DEACTIVATION, "notifyOthersOnDeactivation"},
};

const char *as_set_active_option_name(uint32_t option) { return LOOKUP(set_active_options, option); }

static const struct asi_name permissions[] = {
    {AS_RECORD_PERMISSION_UNDETERMINED, "undetermined"},
    {AS_RECORD_PERMISSION_DENIED, "denied"},
    {AS_RECORD_PERMISSION_GRANTED, "granted"},
};

const char *as_record_permission_name(int32_t permission) { return LOOKUP(permissions, permission); }

int32_t asi_record_permission(const char *name) {
    for (size_t i = 0; name && i < sizeof permissions / sizeof permissions[0]; i++)
        if (strcmp(permissions[i].name, name) == 0) return (int32_t)permissions[i].value;
    return AS_RECORD_PERMISSION_UNDETERMINED;
}

static const struct asi_name interruption_types[] = {
    {AS_INTERRUPTION_TYPE_ENDED, "ended"},
    {AS_INTERRUPTION_TYPE_BEGAN, "began"},
};

const char *as_interruption_type_name(uint32_t type) { return LOOKUP(interruption_types, type); }

static const struct asi_name interruption_options[] = {
    {0, "none"},
    {AS_INTERRUPTION_OPTION_SHOULD_RESUME, "shouldResume"},
};

const char *as_interruption_options_name(uint32_t options) { return LOOKUP(interruption_options, options); }

static const struct asi_name interruption_reasons[] = {
    {AS_INTERRUPTION_REASON_DEFAULT, "default"},
    {AS_INTERRUPTION_REASON_BUILT_IN_MIC_MUTED, "builtInMicMuted"},
    {AS_INTERRUPTION_REASON_ROUTE_DISCONNECTED, "routeDisconnected"},
};

const char *as_interruption_reason_name(uint32_t reason) { return LOOKUP(interruption_reasons, reason); }

static const struct asi_name route_change_reasons[] = {
    {AS_ROUTE_CHANGE_UNKNOWN, "unknown"},
    {AS_ROUTE_CHANGE_NEW_DEVICE_AVAILABLE, "newDeviceAvailable"},
    {AS_ROUTE_CHANGE_OLD_DEVICE_UNAVAILABLE, "oldDeviceUnavailable"},
    {AS_ROUTE_CHANGE_CATEGORY_CHANGE, "categoryChange"},
    {AS_ROUTE_CHANGE_OVERRIDE, "override"},
    {AS_ROUTE_CHANGE_WAKE_FROM_SLEEP, "wakeFromSleep"},
    {AS_ROUTE_CHANGE_NO_SUITABLE_ROUTE_FOR_CATEGORY, "noSuitableRouteForCategory"},
    {AS_ROUTE_CHANGE_ROUTE_CONFIGURATION_CHANGE, "routeConfigurationChange"},
};

const char *as_route_change_reason_name(uint32_t reason) { return LOOKUP(route_change_reasons, reason); }

static const struct asi_name silence_hints[] = {
    {AS_SILENCE_SECONDARY_AUDIO_HINT_END, "end"},
    {AS_SILENCE_SECONDARY_AUDIO_HINT_BEGIN, "begin"},
};

const char *as_silence_secondary_audio_hint_name(uint32_t type) { return LOOKUP(silence_hints, type); }

/* A code recd sent by name (an event without its numeric field): its value, or fallback. */
static uint32_t value_of(const struct asi_name *names, size_t count, const char *name, uint32_t fallback) {
    for (size_t i = 0; name && i < count; i++)
        if (strcmp(names[i].name, name) == 0) return (uint32_t)names[i].value;
    return fallback;
}

uint32_t asi_interruption_type(const char *name) {
    return value_of(interruption_types, sizeof interruption_types / sizeof interruption_types[0], name,
                    AS_INTERRUPTION_TYPE_BEGAN);
}

uint32_t asi_interruption_reason(const char *name) {
    return value_of(interruption_reasons, sizeof interruption_reasons / sizeof interruption_reasons[0], name,
                    AS_INTERRUPTION_REASON_DEFAULT);
}

uint32_t asi_route_change_reason(const char *name) {
    return value_of(route_change_reasons, sizeof route_change_reasons / sizeof route_change_reasons[0], name,
                    AS_ROUTE_CHANGE_UNKNOWN);
}
