#!/usr/bin/env bash
# Regenerates every icon from the SVG sources in icons/source/: the app icons at all the sizes the
# Tauri bundler wants (via `tauri icon`), and the tray icons for each state. Needs rsvg-convert
# (Debian: librsvg2-bin), ImageMagick's convert (Debian: imagemagick) and the Tauri CLI
# (`npx @tauri-apps/cli@2`).
set -euo pipefail
cd "$(dirname "$0")"
rsvg-convert -w 1024 -h 1024 source/app-icon.svg -o source/app-icon.png
npx --yes @tauri-apps/cli@2 icon source/app-icon.png -o .
# Mobile targets are not shipped.
rm -rf android ios
# Tray icons: 64 px renders crisply on 22-32 px panels at 1x and 2x scale.
for state in idle live pending; do
  rsvg-convert -w 64 -h 64 "source/tray-$state.svg" -o "tray-$state.png"
done
# "An agent needs you" (issue 15): the idle icon with a red badge holding a white "!" at the top
# right, away from the live/pending dot at the bottom right, so it differs by shape, not only colour.
convert tray-idle.png \( -size 64x64 xc:none -fill '#dc2626' -stroke '#111827' -strokewidth 3 \
  -draw 'circle 47,17 47,1' -stroke none -fill white -draw 'roundrectangle 44.5,7 49.5,21 2,2' \
  -draw 'circle 47,26 47,23.3' \) -composite tray-attention.png
