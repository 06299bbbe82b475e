# bash completion for netmodel(1). Installed by scripts/install as
# PREFIX/share/bash-completion/completions/netmodel. The lists are checked against
# `netmodel --help` and schema/openrpc.json by Tests/interop/test_install.py.

_netmodel() {
  local cur prev
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  local commands="serve call watch stop top check-config --version --help"
  local serve_options="--socket --no-stdio --log-level --log-format --max-message-bytes --max-unread-bytes --max-batch-elements --max-pending-requests --shutdown-timeout-ms --state-dir --max-age-ms --when-exhausted --simulate --seed --backend --config --environment --max-entities --entity-idle-ms --max-lists --list-idle-ms --max-held-bytes --max-warm-bytes --max-ledger-entries --max-ledger-bytes --max-api-calls-per-second --config-file --print-config"
  local methods="initialize shutdown exit rpc.discover stats inspect follow unfollow setFollowState getFollowState subscribe unsubscribe fetchList getEntity setInterfaceState sync getMutations configure \$/cancelRequest"
  local topics="entity entity: list: stats mutations"

  if ((COMP_CWORD == 1)); then
    if [[ $cur == -* ]]; then
      mapfile -t COMPREPLY < <(compgen -W "$commands $serve_options" -- "$cur")
    else
      mapfile -t COMPREPLY < <(compgen -W "$commands" -- "$cur")
    fi
    return
  fi

  local command=${COMP_WORDS[1]}
  [[ $command == -* ]] && command=serve
  case $command in
    serve)
      case $prev in
        --log-level) mapfile -t COMPREPLY < <(compgen -W "debug info warn error off" -- "$cur"); return ;;
        --log-format) mapfile -t COMPREPLY < <(compgen -W "text json" -- "$cur"); return ;;
        --backend) mapfile -t COMPREPLY < <(compgen -W "local rest" -- "$cur"); return ;;
        --when-exhausted) mapfile -t COMPREPLY < <(compgen -W "rollback queue" -- "$cur"); return ;;
        --config | --config-file) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
        --state-dir) mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return ;;
        --max-*|--shutdown-timeout-ms|--simulate|--seed|--environment|--entity-idle-ms|--list-idle-ms) return ;;
      esac
      mapfile -t COMPREPLY < <(compgen -W "$serve_options" -- "$cur")
      ;;
    call)
      # The method is the first word that is not an option; params follow it.
      local i
      for ((i = 2; i < COMP_CWORD; i++)); do
        [[ ${COMP_WORDS[i]} == -* ]] || return
      done
      if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "--socket= --timeout= --help" -- "$cur")
      else
        mapfile -t COMPREPLY < <(compgen -W "$methods" -- "$cur")
      fi
      ;;
    watch)
      if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "--socket= --count= --until= --timeout= --help" -- "$cur")
      else
        mapfile -t COMPREPLY < <(compgen -W "$topics" -- "$cur")
      fi
      ;;
    stop)
      mapfile -t COMPREPLY < <(compgen -W "--socket= --timeout= --help" -- "$cur")
      ;;
    top)
      mapfile -t COMPREPLY < <(compgen -W "--socket= --json --help" -- "$cur")
      ;;
    check-config)
      ((COMP_CWORD == 2)) && mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      ;;
  esac
  # No space after a word that asks for more (--socket=, entity:).
  if ((${#COMPREPLY[@]} == 1)) && [[ ${COMPREPLY[0]} == *[=:] ]]; then
    compopt -o nospace 2>/dev/null || true
  fi
}
complete -F _netmodel netmodel
