/* Prints every name libaudiosession gives, one "KIND VALUE NAME" line each, for the values of
 * the header and a few it does not know (CLibraryTests compares them with recd's names). */
#include <audiosession.h>
#include <stdio.h>

int main(void) {
    const as_status errors[] = {AS_OK, AS_ERROR_BAD_PARAM, AS_ERROR_IS_BUSY, AS_ERROR_INCOMPATIBLE_CATEGORY,
                                AS_ERROR_CANNOT_INTERRUPT_OTHERS, AS_ERROR_CANNOT_START_PLAYING,
                                AS_ERROR_CANNOT_START_RECORDING, AS_ERROR_INSUFFICIENT_PRIORITY,
                                AS_ERROR_RESOURCE_NOT_AVAILABLE, AS_ERROR_SESSION_NOT_ACTIVE, AS_ERROR_EXPIRED_SESSION,
                                AS_ERROR_MISSING_ENTITLEMENT, AS_ERROR_MEDIA_SERVICES_FAILED,
                                AS_ERROR_NOT_SESSION_OWNER, AS_ERROR_NOT_ADMINISTRATOR, AS_ERROR_UNSPECIFIED, 12345};
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) printf("error %d %s\n", errors[i], as_error_name(errors[i]));
    const uint64_t options[] = {AS_OPTION_MIX_WITH_OTHERS, AS_OPTION_DUCK_OTHERS, AS_OPTION_ALLOW_BLUETOOTH_HFP,
                                AS_OPTION_DEFAULT_TO_SPEAKER, AS_OPTION_INTERRUPT_SPOKEN_AUDIO_AND_MIX_WITH_OTHERS,
                                AS_OPTION_ALLOW_BLUETOOTH_A2DP, AS_OPTION_ALLOW_AIRPLAY,
                                AS_OPTION_OVERRIDE_MUTED_MICROPHONE_INTERRUPTION,
                                AS_OPTION_BLUETOOTH_HIGH_QUALITY_RECORDING, 0x3};
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
        printf("option %llu %s\n", (unsigned long long)options[i], as_category_option_name(options[i]));
    printf("setActiveOption %d %s\n", AS_SET_ACTIVE_NOTIFY_OTHERS_ON_DEACTIVATION,
           as_set_active_option_name(AS_SET_ACTIVE_NOTIFY_OTHERS_ON_DEACTIVATION));
    const int32_t permissions[] = {AS_RECORD_PERMISSION_UNDETERMINED, AS_RECORD_PERMISSION_DENIED,
                                   AS_RECORD_PERMISSION_GRANTED, 7};
    for (size_t i = 0; i < sizeof permissions / sizeof permissions[0]; i++)
        printf("permission %d %s\n", permissions[i], as_record_permission_name(permissions[i]));
    for (uint32_t value = 0; value <= 9; value++) {
        printf("interruptionType %u %s\n", value, as_interruption_type_name(value));
        printf("interruptionOptions %u %s\n", value, as_interruption_options_name(value));
        printf("interruptionReason %u %s\n", value, as_interruption_reason_name(value));
        printf("routeChangeReason %u %s\n", value, as_route_change_reason_name(value));
        printf("silenceHint %u %s\n", value, as_silence_secondary_audio_hint_name(value));
    }
    return 0;
}
