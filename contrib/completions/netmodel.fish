# fish completion for netmodel(1). Installed by scripts/install as
# PREFIX/share/fish/vendor_completions.d/netmodel.fish. The lists are checked against
# `netmodel --help` and schema/openrpc.json by Tests/interop/test_install.py.

set -l commands serve call watch stop top check-config
# -a expands what it is given when completing: the $ of $/cancelRequest is escaped for that.
set -l methods 'initialize shutdown exit rpc.discover stats inspect follow unfollow setFollowState getFollowState subscribe unsubscribe fetchList getEntity setInterfaceState sync getMutations configure \\$/cancelRequest'
set -l topics entity entity: list: stats mutations

complete -c netmodel -f
complete -c netmodel -n "not __fish_seen_subcommand_from $commands" -a serve -d 'serve on stdin/stdout (and a socket)'
complete -c netmodel -n "not __fish_seen_subcommand_from $commands" -a call -d 'one request to a running server'
complete -c netmodel -n "not __fish_seen_subcommand_from $commands" -a watch -d 'print stateChanged notifications'
complete -c netmodel -n "not __fish_seen_subcommand_from $commands" -a stop -d 'stop the daemon on the socket'
complete -c netmodel -n "not __fish_seen_subcommand_from $commands" -a top -d 'a live view of a running server'
complete -c netmodel -n "not __fish_seen_subcommand_from $commands" -a check-config -d 'check a REST configuration'
complete -c netmodel -n "not __fish_seen_subcommand_from $commands" -l version -d 'print the version'
complete -c netmodel -n "not __fish_seen_subcommand_from $commands" -l help -d 'print the help'

set -l serve "not __fish_seen_subcommand_from call watch stop top check-config"
complete -c netmodel -n $serve -l socket -d 'also listen on a Unix socket'
complete -c netmodel -n $serve -l no-stdio -d 'serve the socket only'
complete -c netmodel -n $serve -l log-level -x -a 'debug info warn error off'
complete -c netmodel -n $serve -l log-format -x -a 'text json'
complete -c netmodel -n $serve -l max-message-bytes -x
complete -c netmodel -n $serve -l max-unread-bytes -x
complete -c netmodel -n $serve -l max-batch-elements -x
complete -c netmodel -n $serve -l max-pending-requests -x
complete -c netmodel -n $serve -l shutdown-timeout-ms -x
complete -c netmodel -n $serve -l state-dir -x -a '(__fish_complete_directories)'
complete -c netmodel -n $serve -l max-age-ms -x
complete -c netmodel -n $serve -l when-exhausted -x -a 'rollback queue'
complete -c netmodel -n $serve -l simulate -x
complete -c netmodel -n $serve -l seed -x
complete -c netmodel -n $serve -l backend -x -a 'local rest'
complete -c netmodel -n $serve -l config -r -F
complete -c netmodel -n $serve -l environment -x
complete -c netmodel -n $serve -l max-entities -x
complete -c netmodel -n $serve -l entity-idle-ms -x
complete -c netmodel -n $serve -l max-lists -x
complete -c netmodel -n $serve -l list-idle-ms -x
complete -c netmodel -n $serve -l max-held-bytes -x
complete -c netmodel -n $serve -l max-warm-bytes -x
complete -c netmodel -n $serve -l max-ledger-entries -x
complete -c netmodel -n $serve -l max-ledger-bytes -x
complete -c netmodel -n $serve -l max-api-calls-per-second -x
complete -c netmodel -n $serve -l config-file -r -F
complete -c netmodel -n $serve -l print-config -d 'print the options in force'

# Before the first argument of COMMAND (the method of `call`, the first topic of
# `watch`), where their options go.
function __netmodel_before_argument --argument-names command
    set -l words (string match -v -- '-*' (commandline -opc))
    test (count $words) -eq 2; and test "$words[2]" = $command
end
complete -c netmodel -n "__netmodel_before_argument call; or __netmodel_before_argument watch" -l socket -r -F \
    -d "the server's socket"
complete -c netmodel -n "__netmodel_before_argument call" -l timeout -x -d 'give up after MS'
complete -c netmodel -n "__netmodel_before_argument call" -a $methods
complete -c netmodel -n "__netmodel_before_argument watch" -l count -x -d 'end after N changes'
complete -c netmodel -n "__netmodel_before_argument watch" -l until -x -d 'end when a state matches PATH=VALUE'
complete -c netmodel -n "__netmodel_before_argument watch" -l timeout -x -d 'give up after MS'
complete -c netmodel -n "__fish_seen_subcommand_from watch" -a "$topics"
complete -c netmodel -n "__fish_seen_subcommand_from stop" -l socket -r -F -d "the server's socket"
complete -c netmodel -n "__fish_seen_subcommand_from stop" -l timeout -x -d 'give up after MS'
complete -c netmodel -n "__fish_seen_subcommand_from top" -l socket -r -F -d "the server's socket"
complete -c netmodel -n "__fish_seen_subcommand_from top" -l json -d 'one JSON snapshot per line'
complete -c netmodel -n "__fish_seen_subcommand_from check-config" -F
