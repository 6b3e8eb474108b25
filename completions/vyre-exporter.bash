# bash completion for vyre-exporter (installed as
# share/bash-completion/completions/vyre-exporter). Self-contained: needs
# nothing from the bash-completion package.

_vyre_exporter()
{
    local cur prev
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()
    case $prev in
    --web.listen-address)
        COMPREPLY=($(compgen -W ":9947 127.0.0.1:9947 127.0.0.1:0" -- "$cur"))
        return
        ;;
    --web.telemetry-path)
        COMPREPLY=($(compgen -W "/metrics" -- "$cur"))
        return
        ;;
    --telemetry.dir | --cache.dir)
        COMPREPLY=($(compgen -d -- "$cur"))
        return
        ;;
    --web.config.file)
        COMPREPLY=($(compgen -f -- "$cur"))
        return
        ;;
    --kernels.top-n | --cache.refresh-interval | --cache-usage.interval)
        return
        ;;
    esac
    COMPREPLY=($(compgen -W "--web.listen-address --web.telemetry-path --web.config.file
        --kernels.top-n --telemetry.dir --cache.dir --cache.refresh-interval
        --cache-usage.interval --no-gpu --no-cache --no-cache-usage --collector.dcgm-compat
        -h --help -V --version" -- "$cur"))
}
complete -F _vyre_exporter vyre-exporter
