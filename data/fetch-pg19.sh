#!/usr/bin/env bash
# fetch-pg19.sh — download the PG-19 test split (100 books) from DeepMind's public bucket
# into PG-19's own layout, readable by `replayssm kl --data DIR`:
#     DIR/metadata.csv            (no header: book_id,short_book_title,publication_date,book_link)
#     DIR/<split>/<book_id>.txt
# usage: data/fetch-pg19.sh [DIR] [split]      (defaults: data/pg19, test)
# Needs curl and python3 (for the JSON object listing). Re-running skips complete files.
# Sources: the PG-19 README (github.com/google-deepmind/pg19): the data lives in the public
# Google Cloud Storage bucket gs://deepmind-gutenberg; objects are also served over HTTPS at
# https://storage.googleapis.com/deepmind-gutenberg/<object>, and listed by the GCS JSON API.
set -euo pipefail
dir=${1:-data/pg19}
split=${2:-test}
case "$split" in train|validation|test) ;; *) echo "fetch-pg19: split must be train, validation or test" >&2; exit 2;; esac
base=https://storage.googleapis.com/deepmind-gutenberg
list=https://storage.googleapis.com/storage/v1/b/deepmind-gutenberg/o
mkdir -p "$dir/$split"

echo "fetch-pg19: metadata.csv"
curl -fsSL --retry 3 -o "$dir/metadata.csv.part" "$base/metadata.csv"
mv "$dir/metadata.csv.part" "$dir/metadata.csv"

# List the split's objects (name and size) page by page.
objects=$(mktemp)
trap 'rm -f "$objects"' EXIT
token=""
while :; do
  url="$list?prefix=$split/&fields=nextPageToken,items(name,size,md5Hash)&maxResults=1000"
  [ -n "$token" ] && url="$url&pageToken=$token"
  page=$(curl -fsSL --retry 3 "$url")
  token=$(printf '%s' "$page" | python3 -c '
import json, sys
d = json.load(sys.stdin)
with open(sys.argv[1], "a") as out:
    for it in d.get("items", []):
        if it["name"].endswith(".txt"):
            out.write("%s %s %s\n" % (it["name"], it["size"], it.get("md5Hash", "")))
print(d.get("nextPageToken", ""))' "$objects")
  [ -z "$token" ] && break
done
n=$(wc -l < "$objects")
[ "$n" -gt 0 ] || { echo "fetch-pg19: no objects listed under $split/" >&2; exit 1; }
echo "fetch-pg19: $n books in $split"

i=0
while read -r name size md5; do
  i=$((i + 1))
  out="$dir/$name"
  if [ -f "$out" ] && [ "$(stat -c %s "$out")" = "$size" ]; then continue; fi
  printf 'fetch-pg19: [%d/%d] %s (%s bytes)\n' "$i" "$n" "$name" "$size"
  curl -fsSL --retry 3 -o "$out.part" "$base/$name"
  got=$(stat -c %s "$out.part")
  [ "$got" = "$size" ] || { echo "fetch-pg19: $name: got $got bytes, expected $size" >&2; exit 1; }
  if [ -n "$md5" ]; then  # GCS md5Hash is base64 of the binary MD5
    want=$(printf '%s' "$md5" | base64 -d | od -An -tx1 | tr -d ' \n')
    have=$(md5sum "$out.part" | cut -d' ' -f1)
    [ "$want" = "$have" ] || { echo "fetch-pg19: $name: md5 mismatch" >&2; exit 1; }
  fi
  mv "$out.part" "$out"
  id=$(basename "$name" .txt)
  grep -q "^$id," "$dir/metadata.csv" || echo "fetch-pg19: warning: $id not in metadata.csv" >&2
done < "$objects"
echo "fetch-pg19: done: $dir/$split ($n books), $dir/metadata.csv"
