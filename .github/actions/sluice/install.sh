#!/usr/bin/env bash
# Installs the `sluice` binary for this machine: the prebuilt release archive for the action's
# own version, verified against the release's SHA256SUMS, or, only when the release has no
# archive for this platform (or the action is used at a branch or commit rather than a release
# tag), a build from the action's own source with `cargo install`.
#
#   install.sh --dest DIR [--version X.Y.Z] [--ref REF] [--target TRIPLE]
#              [--base-url URL] [--source DIR]
#
#   --dest      install into DIR/bin (required)
#   --version   release to install (default: the version in the source's Cargo.toml)
#   --ref       the ref the action was used at (`uses: …@REF`); a branch or commit other than
#               the release tag vVERSION builds from source, so the binary matches the action
#   --target    Rust target triple of the archive (default: from `uname`)
#   --base-url  where releases live (default: REPOSITORY/releases/download, from Cargo.toml);
#               the archive is BASE/vVERSION/sluice-vVERSION-TARGET.tar.gz, beside SHA256SUMS
#   --source    the repository checkout to build from (default: three levels above this script)
#
# Exit codes: 0 installed; 1 the archive or its checksum is wrong or missing, or the build
# failed (never falls back to building when a published archive fails verification); 2 usage.
set -euo pipefail

die() {
  echo "sluice install: $1" >&2
  exit "${2:-1}"
}

dest="" version="" ref="" target="" base_url="" source=""
source="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
while [ $# -gt 0 ]; do
  case "$1" in
    --dest | --version | --ref | --target | --base-url | --source)
      [ $# -ge 2 ] || die "$1 needs a value" 2
      declare "$(echo "${1#--}" | tr - _)=$2"
      shift 2
      ;;
    *) die "unknown argument: $1" 2 ;;
  esac
done
[ -n "$dest" ] || die "--dest DIR is required" 2

# The first `key = "value"` of Cargo.toml's [package] table.
package_field() {
  sed -n '/^\[package\]/,/^\[/{s/^'"$1"' *= *"\(.*\)"/\1/p;}' "$source/Cargo.toml" | head -n1
}

host_target() {
  local arch os
  arch="$(uname -m)"
  os="$(uname -s)"
  case "$arch" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) return 0 ;;
  esac
  case "$os" in
    Linux) echo "$arch-unknown-linux-musl" ;;
    Darwin) echo "$arch-apple-darwin" ;;
  esac
}

sha256_of() {
  if command -v sha256sum >/dev/null; then
    sha256sum "$1" | cut -d' ' -f1
  else
    shasum -a 256 "$1" | cut -d' ' -f1
  fi
}

build_from_source() {
  echo "sluice install: $1; building from $source with cargo" >&2
  command -v cargo >/dev/null ||
    die "cargo is needed to build sluice here; add a Rust toolchain step (e.g. dtolnay/rust-toolchain@stable) before this action"
  cargo install --locked --quiet --path "$source" --root "$dest" || die "cargo install failed"
  exit 0
}

[ -f "$source/Cargo.toml" ] || die "$source/Cargo.toml not found; pass --source DIR or --version" 2
version="${version:-$(package_field version)}"
[ -n "$version" ] || die "no version in $source/Cargo.toml; pass --version" 2
tag="v$version"
if [ -z "$base_url" ]; then
  repository="$(package_field repository)"
  [ -n "$repository" ] || die "no repository in $source/Cargo.toml; pass --base-url" 2
  base_url="${repository%/}/releases/download"
fi
target="${target:-$(host_target)}"

if [ -n "$ref" ] && [ "$ref" != "$tag" ]; then
  build_from_source "the action is used at $ref, not at the release tag $tag"
fi
[ -n "$target" ] || build_from_source "no prebuilt binary for $(uname -s) $(uname -m)"

archive="sluice-$tag-$target.tar.gz"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Only a missing archive (HTTP 404, or no such file) means "no binary matches"; any other
# failure to download is an error, not a reason to run different code.
status="$(curl -sSL --retry 3 -o "$work/$archive" -w '%{http_code}' "$base_url/$tag/$archive" 2>"$work/curl.err")" || {
  case "$base_url" in
    file://*) [ -e "${base_url#file://}/$tag/$archive" ] || build_from_source "the release $tag has no $archive" ;;
  esac
  die "cannot download $base_url/$tag/$archive: $(cat "$work/curl.err")"
}
case "$status" in
  200 | 000) ;; # 000: file:// URLs report no HTTP status
  404) build_from_source "the release $tag has no $archive" ;;
  *) die "cannot download $base_url/$tag/$archive: HTTP $status" ;;
esac

curl -fsSL --retry 3 -o "$work/SHA256SUMS" "$base_url/$tag/SHA256SUMS" ||
  die "the release $tag has $archive but no SHA256SUMS to verify it with; refusing to install it"
expected="$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1 }' "$work/SHA256SUMS")"
[ -n "$expected" ] || die "SHA256SUMS of $tag lists no checksum for $archive; refusing to install it"
actual="$(sha256_of "$work/$archive")"
[ "$actual" = "$expected" ] ||
  die "checksum mismatch for $archive: expected $expected, got $actual; refusing to install it"

mkdir -p "$work/unpacked" "$dest/bin"
tar -xzf "$work/$archive" -C "$work/unpacked"
binary="$(find "$work/unpacked" -type f -name sluice | head -n1)"
[ -n "$binary" ] || die "$archive holds no sluice binary"
chmod 0755 "$binary"
installed="$("$binary" --version)" || die "the sluice binary in $archive does not run on this machine"
[ "$installed" = "sluice $version" ] || die "$archive holds $installed, not sluice $version"
install -m 0755 "$binary" "$dest/bin/sluice"
echo "sluice install: installed $installed ($target, sha256 $actual) in $dest/bin" >&2
