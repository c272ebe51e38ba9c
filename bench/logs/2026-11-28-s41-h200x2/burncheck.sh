export LD_LIBRARY_PATH=$PWD/.device/lib
python3 .device/synth_imagenet.py .device/photos /tmp/bs 3000 --classes 10 >/dev/null
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }
for k in 1 2; do .device/ferry load /tmp/bs --device cpu --workers 7 --crop random --flip --epochs 100000 --seed $k > $OUT/burn-$k.log 2>&1 & done
sleep 3; a=$(busy); sleep 10; b=$(busy)
python3 -c "import sys; a=list(map(int,'$a'.split())); b=list(map(int,'$b'.split())); print('cores busy (all 32):', round(32*(b[0]-a[0])/(b[1]-a[1]),1))"
kill %1 %2; wait
for k in 1 2; do echo "burner $k: $(grep -c 'images/s' $OUT/burn-$k.log) epoch lines"; grep 'images/s' $OUT/burn-$k.log | sed -n '3p;$p'; done
