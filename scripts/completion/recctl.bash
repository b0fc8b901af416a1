# bash completion for recctl. Install: cp recctl.bash /usr/share/bash-completion/completions/recctl
_recctl() {
    local cur prev words cword
    _init_completion 2>/dev/null || { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
    local commands="status session routes play pause stop record cue meter watch permission mute archive help"
    local apps
    apps() { recctl --json session list 2>/dev/null | python3 -c 'import json,sys; print(" ".join(s["app"] for s in json.load(sys.stdin)))' 2>/dev/null; }
    case "$prev" in
        --category) COMPREPLY=($(compgen -W "ambient soloAmbient playback record playAndRecord multiRoute" -- "$cur")); return ;;
        --mode) COMPREPLY=($(compgen -W "default measurement moviePlayback shortFormVideo spokenAudio videoChat videoRecording voiceChat voicePrompt dualRoute" -- "$cur")); return ;;
        --options) COMPREPLY=($(compgen -W "mixWithOthers duckOthers allowBluetoothHFP defaultToSpeaker interruptSpokenAudioAndMixWithOthers allowBluetoothA2DP allowAirPlay overrideMutedMicrophoneInterruption bluetoothHighQualityRecording" -- "$cur")); return ;;
        --policy) COMPREPLY=($(compgen -W "default longFormAudio longFormVideo" -- "$cur")); return ;;
        --bus) COMPREPLY=($(compgen -W "main cue both none" -- "$cur")); return ;;
        --socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
    local i command="" sub=""
    for ((i = 1; i < cword; i++)); do
        case "${words[i]}" in
            --socket) ((i++)) ;;
            -*) ;;
            *) if [ -z "$command" ]; then command=${words[i]}; elif [ -z "$sub" ]; then sub=${words[i]}; fi ;;
        esac
    done
    case "$command" in
        "") COMPREPLY=($(compgen -W "$commands --json --socket --help" -- "$cur")) ;;
        session)
            if [ -z "$sub" ]; then COMPREPLY=($(compgen -W "list show set activate deactivate prefer override delete" -- "$cur"))
            else COMPREPLY=($(compgen -W "$(apps) --category --mode --options --policy --mic-usage --notify-others --force --input --sample-rate --io-buffer --input-channels --output-channels speaker none" -- "$cur")); fi ;;
        permission)
            if [ -z "$sub" ]; then COMPREPLY=($(compgen -W "list request grant deny reset" -- "$cur")); else COMPREPLY=($(compgen -W "$(apps)" -- "$cur")); fi ;;
        record)
            if [ -z "$sub" ]; then COMPREPLY=($(compgen -W "start stop" -- "$cur")); else COMPREPLY=($(compgen -W "$(apps) --stream --input --bus" -- "$cur")); fi ;;
        archive)
            if [ -z "$sub" ]; then COMPREPLY=($(compgen -W "list verify reindex" -- "$cur")); else COMPREPLY=($(compgen -f -W "--app --since" -- "$cur")); fi ;;
        play) COMPREPLY=($(compgen -f -W "$(apps) --stream --to" -- "$cur")) ;;
        mute) COMPREPLY=($(compgen -W "$(apps) on off" -- "$cur")) ;;
        *) COMPREPLY=($(compgen -W "$(apps)" -- "$cur")) ;;
    esac
}
complete -F _recctl recctl
