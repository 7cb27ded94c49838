# Helpers sourced by the scripts.

# installs the Debian packages not yet installed; fails with the reason when it cannot
need_packages() {
    local missing=()
    for p in "$@"; do
        # a tool on PATH counts (cmake, ninja, g++ installed some other way than Debian's package:
        # a machine without a network then runs anyway)
        command -v "${p%-build}" >/dev/null && continue
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq || { echo "apt-get update failed: cannot install ${missing[*]}" >&2; return 1; }
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
        { echo "apt-get install failed for: ${missing[*]}" >&2; return 1; }
}
