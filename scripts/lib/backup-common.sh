# scripts/lib/backup-common.sh — what scripts/backup and scripts/restore share: reading an env file,
# database URLs (split, masked), the PostgreSQL client programs run with the password in their
# environment. Sourced; the caller defines die, usage_error and QUIET first.
# shellcheck shell=bash

readonly DEFAULT_PG_BIN=/usr/lib/postgresql/15/bin

info() { ((QUIET)) || printf '==> %s\n' "$*" >&2; }
warn() { printf 'warning: %s\n' "$*" >&2; }
need_value() { [[ $# -ge 2 && -n $2 ]] || usage_error "$1 needs a value"; }

# Prints NAME=VALUE\0 for each NAME as FILE sets it (FILE is sourced by a clean bash: nothing of this
# environment shows through).
read_env_file() { # file name...
    local file=$1
    shift
    env -i PATH="${PATH:-/usr/bin:/bin}" bash -c '
        set -a
        . "$1" >/dev/null || exit 1
        shift
        for name; do printf "%s=%s\0" "$name" "${!name-}"; done' bash "$file" "$@"
}

# A URL as it may be shown: the password (in the user part or a password= parameter) masked.
mask_url() {
    local url=$1
    if [[ $url =~ ^([a-z]+://)([^/?@]*@)?(.*)$ ]]; then
        local scheme=${BASH_REMATCH[1]} auth=${BASH_REMATCH[2]} rest=${BASH_REMATCH[3]}
        if [[ $auth == *:* ]]; then auth="${auth%%:*}:***@"; fi
        url=$scheme$auth$rest
    fi
    printf '%s' "$url" | sed -E 's/([?&](ssl)?password=)[^&]*/\1***/g'
}

url_decode() {
    local s=${1//\\/\\\\}
    printf '%b' "${s//%/\\x}"
}

# Splits a postgres:// URL into PG_URL (without the password) and PG_PASSWORD (decoded; may be empty).
# libpq reads a password in two places, the user part (user:PW@) and a `password=` parameter (which
# wins, as in libpq): both go to PG_PASSWORD, and neither stays in PG_URL, which the tools get on their
# command line. A client key's passphrase (`sslpassword=`) has no environment variable, so it is
# refused rather than passed on a command line.
split_database_url() {
    local url=$1
    [[ $url =~ ^(postgres|postgresql)://([^/?]*)(.*)$ ]] ||
        usage_error "the database URL must be a postgres:// or postgresql:// URL (got $(mask_url "$url"))"
    local scheme=${BASH_REMATCH[1]} authority=${BASH_REMATCH[2]} rest=${BASH_REMATCH[3]}
    local userinfo='' hosts=$authority
    if [[ $authority == *@* ]]; then
        userinfo=${authority%@*}
        hosts=${authority##*@}
    fi
    PG_PASSWORD=''
    if [[ $userinfo == *:* ]]; then
        PG_PASSWORD=$(url_decode "${userinfo#*:}")
        userinfo=${userinfo%%:*}
    fi
    local path=${rest%%\?*} params=() kept=() param
    if [[ $rest == *\?* ]]; then IFS='&' read -r -a params <<<"${rest#*\?}"; fi
    for param in "${params[@]}"; do
        [[ -n $param ]] || continue
        if [[ $param != *=* ]]; then kept+=("$param") && continue; fi # libpq's error to report
        case $(url_decode "${param%%=*}") in
            password) PG_PASSWORD=$(url_decode "${param#*=}") ;;
            sslpassword)
                usage_error "the database URL has sslpassword=, which would be on the tools' command line:" \
                    "give the client key's passphrase in a service file (PGSERVICEFILE) instead" ;;
            *) kept+=("$param") ;;
        esac
    done
    PG_URL="$scheme://${userinfo:+$userinfo@}$hosts$path"
    if ((${#kept[@]})); then
        PG_URL+="?$(IFS='&' && printf '%s' "${kept[*]}")"
    fi
}

# Sets PG_BIN to the directory of PROGRAM and psql: DIR when given, else Debian's PostgreSQL 15
# client when it has PROGRAM, else the PATH's.
find_pg_bin() { # program [dir]
    local program=$1 dir=${2:-}
    if [[ -z $dir && -x $DEFAULT_PG_BIN/$program ]]; then dir=$DEFAULT_PG_BIN; fi
    if [[ -n $dir ]]; then
        [[ -x $dir/$program && -x $dir/psql ]] || die "no $program and psql in $dir"
        PG_BIN=$dir
    else
        local tool
        tool=$(command -v "$program") || die "$program not found (install the PostgreSQL client, or give --pg-bin)"
        PG_BIN=$(dirname "$tool")
        [[ -x $PG_BIN/psql ]] || die "psql not found next to $tool"
    fi
}

# Runs a PostgreSQL client program with the password in its environment, never on its command line.
pg_tool() { # program args...
    local program=$1
    shift
    PGPASSWORD=$PG_PASSWORD PGCONNECT_TIMEOUT=${PGCONNECT_TIMEOUT:-10} "$PG_BIN/$program" "$@"
}

pg_query() { # sql -> rows, unaligned
    pg_tool psql -X -q -At -w -v ON_ERROR_STOP=1 -d "$PG_URL" -c "$1"
}
