;; Kernels over tfjs's wasm heap (imported as env.memory): the decode step's forward-only ones (`attendCausal` also runs
;; training's attention, keeping its softmax for `attendCausalGrad`; both run by wasm-attention.ts), then two for
;; training's backward pass (`columnSum`, `geluGrad`, run by wasm-backward.ts), the AdamW update (`adamw`, run by
;; wasm-adamw.ts) and e^x (`exp`, tfjs's `Exp`, run by wasm-exp.ts). Source of decode.wasm.ts: regenerate it with
;; `npx tsx scripts/build-wasm.ts` (a test fails while it is out of date). Pointers are byte offsets into the heap;
;; values are float32; vector loops run 4 lanes (v128) at a time.
(module
  (import "env" "memory" (memory 1))

  ;; e^x for 4 lanes: x = n·ln2 + r with n = round(x·log2 e), e^r by Cephes' degree-6 polynomial for expf, then the
  ;; exponent n put in the float's bits (as 2^(n-1)·2, so n = 128 stays finite). Lanes below -87 give 0 (e^-87 is
  ;; near the smallest normal float); lanes are clamped above at 88.72 (e^88.72 ≈ the largest float); NaN stays NaN.
  (func $exp4 (param $x v128) (result v128)
    (local $n v128) (local $r v128) (local $p v128) (local $below v128)
    (local.set $below (f32x4.lt (local.get $x) (f32x4.splat (f32.const -87))))
    (local.set $x (f32x4.min (local.get $x) (f32x4.splat (f32.const 88.72))))
    (local.set $n (f32x4.nearest (f32x4.mul (local.get $x) (f32x4.splat (f32.const 1.44269504088896341)))))
    (local.set $r (f32x4.sub (f32x4.sub (local.get $x) (f32x4.mul (local.get $n) (f32x4.splat (f32.const 0.693359375))))
      (f32x4.mul (local.get $n) (f32x4.splat (f32.const -2.12194440e-4)))))
    (local.set $p (f32x4.splat (f32.const 1.9875691500e-4)))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (f32x4.splat (f32.const 1.3981999507e-3))))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (f32x4.splat (f32.const 8.3334519073e-3))))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (f32x4.splat (f32.const 4.1665795894e-2))))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (f32x4.splat (f32.const 1.6666665459e-1))))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (f32x4.splat (f32.const 5.0000001201e-1))))
    (local.set $p (f32x4.add (f32x4.add (f32x4.mul (f32x4.mul (local.get $p) (local.get $r)) (local.get $r)) (local.get $r))
      (f32x4.splat (f32.const 1))))
    (local.set $p (f32x4.mul (f32x4.mul (local.get $p) (f32x4.splat (f32.const 2)))
      (i32x4.shl (i32x4.add (i32x4.trunc_sat_f32x4_s (local.get $n)) (i32x4.splat (i32.const 126))) (i32.const 23))))
    (v128.andnot (local.get $p) (local.get $below)))

;; One query's attention over `width` cached columns: scores q·k_l·scale (+ bias[l] unless bias is 0), their
  ;; softmax, and out = Σ_l p_l·v_l. keys and values hold the columns headDim floats apart. scratch holds the scores
  ;; (width rounded up to 4) and then each p_l splat across 4 lanes (4·width floats).
  (func $attendOne
    (param $q i32) (param $keys i32) (param $values i32) (param $bias i32) (param $width i32) (param $headDim i32)
    (param $scale f32) (param $scratch i32) (param $out i32)
    (local $headBytes i32) (local $vectorBytes i32) (local $rounded i32) (local $splats i32) (local $l i32)
    (local $kp i32) (local $d i32) (local $p i32) (local $acc v128) (local $s f32) (local $max f32) (local $sum f32)
    (local $inv f32) (local $acc1 v128) (local $acc2 v128) (local $acc3 v128) (local $maxV v128) (local $qv v128)
    (local.set $headBytes (i32.shl (local.get $headDim) (i32.const 2)))
    (local.set $vectorBytes (i32.shl (i32.and (local.get $headDim) (i32.const -4)) (i32.const 2)))
    (local.set $rounded (i32.and (i32.add (local.get $width) (i32.const 3)) (i32.const -4)))
    (local.set $splats (i32.add (local.get $scratch) (i32.shl (local.get $rounded) (i32.const 2))))
    ;; scores and their max: four columns at a time when the head size is a multiple of 4 (four independent sums,
    ;; reduced together), then the rest one at a time
    (local.set $maxV (f32x4.splat (f32.const -inf)))
    (local.set $kp (local.get $keys))
    (local.set $l (i32.const 0))
    (if (i32.eq (local.get $vectorBytes) (local.get $headBytes)) (then
      (block $quadsScored (loop $scoreQuad
        (br_if $quadsScored (i32.gt_u (i32.add (local.get $l) (i32.const 4)) (local.get $width)))
        (local.set $acc (f32x4.splat (f32.const 0)))
        (local.set $acc1 (local.get $acc))
        (local.set $acc2 (local.get $acc))
        (local.set $acc3 (local.get $acc))
        (local.set $d (i32.const 0))
        (block $quadDotted (loop $quadDot
          (br_if $quadDotted (i32.ge_u (local.get $d) (local.get $headBytes)))
          (local.set $qv (v128.load (i32.add (local.get $q) (local.get $d))))
          (local.set $p (i32.add (local.get $kp) (local.get $d)))
          (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (local.get $qv) (v128.load (local.get $p)))))
          (local.set $p (i32.add (local.get $p) (local.get $headBytes)))
          (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (local.get $qv) (v128.load (local.get $p)))))
          (local.set $p (i32.add (local.get $p) (local.get $headBytes)))
          (local.set $acc2 (f32x4.add (local.get $acc2) (f32x4.mul (local.get $qv) (v128.load (local.get $p)))))
          (local.set $p (i32.add (local.get $p) (local.get $headBytes)))
          (local.set $acc3 (f32x4.add (local.get $acc3) (f32x4.mul (local.get $qv) (v128.load (local.get $p)))))
          (local.set $d (i32.add (local.get $d) (i32.const 16)))
          (br $quadDot)))
        (local.set $acc (f32x4.mul (call $sum4x4 (local.get $acc) (local.get $acc1) (local.get $acc2) (local.get $acc3))
          (f32x4.splat (local.get $scale))))
        (if (local.get $bias) (then
          (local.set $acc (f32x4.add (local.get $acc)
            (v128.load (i32.add (local.get $bias) (i32.shl (local.get $l) (i32.const 2))))))))
        (v128.store (i32.add (local.get $scratch) (i32.shl (local.get $l) (i32.const 2))) (local.get $acc))
        (local.set $maxV (f32x4.max (local.get $maxV) (local.get $acc)))
        (local.set $kp (i32.add (local.get $kp) (i32.shl (local.get $headBytes) (i32.const 2))))
        (local.set $l (i32.add (local.get $l) (i32.const 4)))
        (br $scoreQuad)))))
    (local.set $max (f32.max
      (f32.max (f32x4.extract_lane 0 (local.get $maxV)) (f32x4.extract_lane 1 (local.get $maxV)))
      (f32.max (f32x4.extract_lane 2 (local.get $maxV)) (f32x4.extract_lane 3 (local.get $maxV)))))
    (block $scored (loop $score
      (br_if $scored (i32.ge_u (local.get $l) (local.get $width)))
      (local.set $acc (f32x4.splat (f32.const 0)))
      (local.set $d (i32.const 0))
      (block $dotted (loop $dot
        (br_if $dotted (i32.ge_u (local.get $d) (local.get $vectorBytes)))
        (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul
          (v128.load (i32.add (local.get $q) (local.get $d))) (v128.load (i32.add (local.get $kp) (local.get $d))))))
        (local.set $d (i32.add (local.get $d) (i32.const 16)))
        (br $dot)))
      (local.set $s (f32.add
        (f32.add (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
        (f32.add (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc)))))
      (block $tailDone (loop $tail
        (br_if $tailDone (i32.ge_u (local.get $d) (local.get $headBytes)))
        (local.set $s (f32.add (local.get $s) (f32.mul
          (f32.load (i32.add (local.get $q) (local.get $d))) (f32.load (i32.add (local.get $kp) (local.get $d))))))
        (local.set $d (i32.add (local.get $d) (i32.const 4)))
        (br $tail)))
      (local.set $s (f32.mul (local.get $s) (local.get $scale)))
      (if (local.get $bias) (then
        (local.set $s (f32.add (local.get $s) (f32.load (i32.add (local.get $bias) (i32.shl (local.get $l) (i32.const 2))))))))
      (f32.store (i32.add (local.get $scratch) (i32.shl (local.get $l) (i32.const 2))) (local.get $s))
      (local.set $max (f32.max (local.get $max) (local.get $s)))
      (local.set $kp (i32.add (local.get $kp) (local.get $headBytes)))
      (local.set $l (i32.add (local.get $l) (i32.const 1)))
      (br $score)))
    ;; softmax numerators, 4 at a time over the rounded-up scores, and their sum over the real ones
    (local.set $p (local.get $scratch))
    (block $exped (loop $expo
      (br_if $exped (i32.ge_u (local.get $p) (local.get $splats)))
      (v128.store (local.get $p) (call $exp4 (f32x4.sub (v128.load (local.get $p)) (f32x4.splat (local.get $max)))))
      (local.set $p (i32.add (local.get $p) (i32.const 16)))
      (br $expo)))
    (local.set $sum (f32.const 0))
    (local.set $l (i32.const 0))
    (block $summed (loop $add
      (br_if $summed (i32.ge_u (local.get $l) (local.get $width)))
      (local.set $sum (f32.add (local.get $sum) (f32.load (i32.add (local.get $scratch) (i32.shl (local.get $l) (i32.const 2))))))
      (local.set $l (i32.add (local.get $l) (i32.const 1)))
      (br $add)))
    (local.set $inv (f32.div (f32.const 1) (local.get $sum)))
    ;; each probability, splat
    (local.set $l (i32.const 0))
    (block $splatted (loop $splat
      (br_if $splatted (i32.ge_u (local.get $l) (local.get $width)))
      (v128.store (i32.add (local.get $splats) (i32.shl (local.get $l) (i32.const 4))) (f32x4.splat (f32.mul
        (f32.load (i32.add (local.get $scratch) (i32.shl (local.get $l) (i32.const 2)))) (local.get $inv))))
      (local.set $l (i32.add (local.get $l) (i32.const 1)))
      (br $splat)))
    ;; out, 4 lanes at a time: Σ_l p_l·v_l[d..d+3] in a register
    (local.set $d (i32.const 0))
    (block $lanesDone (loop $lanes
      (br_if $lanesDone (i32.ge_u (local.get $d) (local.get $vectorBytes)))
      (local.set $acc (f32x4.splat (f32.const 0)))
      (local.set $acc1 (local.get $acc))
      (local.set $acc2 (local.get $acc))
      (local.set $acc3 (local.get $acc))
      (local.set $kp (i32.add (local.get $values) (local.get $d)))
      (local.set $p (local.get $splats))
      (local.set $l (i32.const 0))
      ;; four columns at a time into four independent sums, then the rest one at a time
      (block $quadsWeighed (loop $weighQuad
        (br_if $quadsWeighed (i32.gt_u (i32.add (local.get $l) (i32.const 4)) (local.get $width)))
        (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (v128.load (local.get $p)) (v128.load (local.get $kp)))))
        (local.set $kp (i32.add (local.get $kp) (local.get $headBytes)))
        (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (v128.load offset=16 (local.get $p)) (v128.load (local.get $kp)))))
        (local.set $kp (i32.add (local.get $kp) (local.get $headBytes)))
        (local.set $acc2 (f32x4.add (local.get $acc2) (f32x4.mul (v128.load offset=32 (local.get $p)) (v128.load (local.get $kp)))))
        (local.set $kp (i32.add (local.get $kp) (local.get $headBytes)))
        (local.set $acc3 (f32x4.add (local.get $acc3) (f32x4.mul (v128.load offset=48 (local.get $p)) (v128.load (local.get $kp)))))
        (local.set $kp (i32.add (local.get $kp) (local.get $headBytes)))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (local.set $l (i32.add (local.get $l) (i32.const 4)))
        (br $weighQuad)))
      (block $weighed (loop $weigh
        (br_if $weighed (i32.ge_u (local.get $l) (local.get $width)))
        (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (v128.load (local.get $p)) (v128.load (local.get $kp)))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (local.set $kp (i32.add (local.get $kp) (local.get $headBytes)))
        (local.set $l (i32.add (local.get $l) (i32.const 1)))
        (br $weigh)))
      (v128.store (i32.add (local.get $out) (local.get $d))
        (f32x4.add (f32x4.add (local.get $acc) (local.get $acc1)) (f32x4.add (local.get $acc2) (local.get $acc3))))
      (local.set $d (i32.add (local.get $d) (i32.const 16)))
      (br $lanes)))
    ;; the head size's remainder, one float at a time
    (block $restDone (loop $rest
      (br_if $restDone (i32.ge_u (local.get $d) (local.get $headBytes)))
      (local.set $s (f32.const 0))
      (local.set $kp (i32.add (local.get $values) (local.get $d)))
      (local.set $p (local.get $splats))
      (local.set $l (i32.const 0))
      (block $weighedRest (loop $weighRest
        (br_if $weighedRest (i32.ge_u (local.get $l) (local.get $width)))
        (local.set $s (f32.add (local.get $s) (f32.mul (f32.load (local.get $p)) (f32.load (local.get $kp)))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (local.set $kp (i32.add (local.get $kp) (local.get $headBytes)))
        (local.set $l (i32.add (local.get $l) (i32.const 1)))
        (br $weighRest)))
      (f32.store (i32.add (local.get $out) (local.get $d)) (local.get $s))
      (local.set $d (i32.add (local.get $d) (i32.const 4)))
      (br $rest))))

    ;; Attention of one decode step, every row and head. C = heads·headDim; W = columns + 1.
  ;;   qkv   [rows, 3C]                   this step's query | key | value of each row
  ;;   k, v  [rows, heads, capacity, hd]  the cache; this step's key and value are written into column `columns`
  ;;   bias  [rows, W]                    additive attention bias (0 visible, -1e9 hidden)
  ;;   y     [rows, C]                    out: softmax(q·kᵀ·scale + bias)·v over columns 0..columns, heads side by side
  ;;   probs [5 × (W rounded up to 4)]    scratch (see $attendOne)
  (func (export "attend")
    (param $qkv i32) (param $k i32) (param $v i32) (param $bias i32) (param $y i32) (param $probs i32)
    (param $rows i32) (param $heads i32) (param $headDim i32) (param $capacity i32) (param $columns i32)
    (param $scale f32)
    (local $c i32) (local $width i32) (local $headBytes i32) (local $b i32) (local $h i32)
    (local $q i32) (local $keys i32) (local $values i32) (local $biasRow i32)
    (local.set $c (i32.mul (local.get $heads) (local.get $headDim)))
    (local.set $width (i32.add (local.get $columns) (i32.const 1)))
    (local.set $headBytes (i32.shl (local.get $headDim) (i32.const 2)))
    (local.set $b (i32.const 0))
    (block $rowsDone (loop $eachRow
      (br_if $rowsDone (i32.ge_u (local.get $b) (local.get $rows)))
      (local.set $biasRow (i32.add (local.get $bias) (i32.shl (i32.mul (local.get $b) (local.get $width)) (i32.const 2))))
      (local.set $h (i32.const 0))
      (block $headsDone (loop $eachHead
        (br_if $headsDone (i32.ge_u (local.get $h) (local.get $heads)))
        ;; q of (b, h); this step's key and value sit C and 2C floats after it.
        (local.set $q (i32.add (local.get $qkv) (i32.shl
          (i32.add (i32.mul (local.get $b) (i32.mul (local.get $c) (i32.const 3))) (i32.mul (local.get $h) (local.get $headDim)))
          (i32.const 2))))
        (local.set $keys (i32.add (local.get $k) (i32.mul (local.get $headBytes)
          (i32.mul (i32.add (i32.mul (local.get $b) (local.get $heads)) (local.get $h)) (local.get $capacity)))))
        (local.set $values (i32.add (local.get $v) (i32.sub (local.get $keys) (local.get $k))))
        (memory.copy (i32.add (local.get $keys) (i32.mul (local.get $headBytes) (local.get $columns)))
          (i32.add (local.get $q) (i32.shl (local.get $c) (i32.const 2))) (local.get $headBytes))
        (memory.copy (i32.add (local.get $values) (i32.mul (local.get $headBytes) (local.get $columns)))
          (i32.add (local.get $q) (i32.shl (local.get $c) (i32.const 3))) (local.get $headBytes))
        (call $attendOne (local.get $q) (local.get $keys) (local.get $values) (local.get $biasRow) (local.get $width)
          (local.get $headDim) (local.get $scale) (local.get $probs)
          (i32.add (local.get $y) (i32.shl
            (i32.add (i32.mul (local.get $b) (local.get $c)) (i32.mul (local.get $h) (local.get $headDim)))
            (i32.const 2))))
        (local.set $h (i32.add (local.get $h) (i32.const 1)))
        (br $eachHead)))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (br $eachRow))))

  ;; GELU (tanh approximation) as x·σ(2u) = x / (1 + e^(-2u)), 2u = x·(cube·x² + linear): n floats (a multiple of 4)
  ;; from x to out. cube and linear as in ops.ts.
  (func (export "gelu") (param $x i32) (param $out i32) (param $n i32) (param $cube f32) (param $linear f32)
    (local $end i32) (local $v v128)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $n) (i32.const 2))))
    (block $done (loop $lanes
      (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
      (local.set $v (v128.load (local.get $x)))
      (v128.store (local.get $out) (f32x4.div (local.get $v) (f32x4.add (f32x4.splat (f32.const 1))
        (call $exp4 (f32x4.neg (f32x4.mul (local.get $v) (f32x4.add
          (f32x4.mul (f32x4.mul (local.get $v) (local.get $v)) (f32x4.splat (local.get $cube)))
          (f32x4.splat (local.get $linear)))))))))
      (local.set $x (i32.add (local.get $x) (i32.const 16)))
      (local.set $out (i32.add (local.get $out) (i32.const 16)))
      (br $lanes))))
;; Layer norm of each row: (x − mean) / √(variance + eps) · gain + bias, rows × width floats from x to out, the
  ;; statistics summed 4 lanes at a time (the width's remainder, if any, one at a time).
  (func (export "layerNorm")
    (param $x i32) (param $gain i32) (param $bias i32) (param $out i32) (param $rows i32) (param $width i32)
    (param $eps f32)
    (local $row i32) (local $end i32) (local $vectorEnd i32) (local $p i32) (local $g i32) (local $b i32) (local $o i32)
    (local $acc v128) (local $mean f32) (local $sum f32) (local $d f32) (local $scale f32) (local $means v128)
    (local $scales v128) (local $r i32)
    (local.set $r (i32.const 0))
    (block $rowsDone (loop $eachRow
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
      (local.set $row (i32.add (local.get $x) (i32.shl (i32.mul (local.get $r) (local.get $width)) (i32.const 2))))
      (local.set $end (i32.add (local.get $row) (i32.shl (local.get $width) (i32.const 2))))
      (local.set $vectorEnd (i32.add (local.get $row) (i32.shl (i32.and (local.get $width) (i32.const -4)) (i32.const 2))))
      ;; mean
      (local.set $acc (f32x4.splat (f32.const 0)))
      (local.set $p (local.get $row))
      (block $d1 (loop $l1
        (br_if $d1 (i32.ge_u (local.get $p) (local.get $vectorEnd)))
        (local.set $acc (f32x4.add (local.get $acc) (v128.load (local.get $p))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (br $l1)))
      (local.set $sum (f32.add
        (f32.add (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
        (f32.add (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc)))))
      (block $t1 (loop $tail1
        (br_if $t1 (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $sum (f32.add (local.get $sum) (f32.load (local.get $p))))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (br $tail1)))
      (local.set $mean (f32.div (local.get $sum) (f32.convert_i32_u (local.get $width))))
      (local.set $means (f32x4.splat (local.get $mean)))
      ;; variance
      (local.set $acc (f32x4.splat (f32.const 0)))
      (local.set $p (local.get $row))
      (block $d2 (loop $l2
        (br_if $d2 (i32.ge_u (local.get $p) (local.get $vectorEnd)))
        (local.set $acc (f32x4.add (local.get $acc)
          (f32x4.mul (f32x4.sub (v128.load (local.get $p)) (local.get $means))
            (f32x4.sub (v128.load (local.get $p)) (local.get $means)))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (br $l2)))
      (local.set $sum (f32.add
        (f32.add (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
        (f32.add (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc)))))
      (block $t2 (loop $tail2
        (br_if $t2 (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $d (f32.sub (f32.load (local.get $p)) (local.get $mean)))
        (local.set $sum (f32.add (local.get $sum) (f32.mul (local.get $d) (local.get $d))))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (br $tail2)))
      (local.set $scale (f32.div (f32.const 1)
        (f32.sqrt (f32.add (f32.div (local.get $sum) (f32.convert_i32_u (local.get $width))) (local.get $eps)))))
      (local.set $scales (f32x4.splat (local.get $scale)))
      ;; normalise, scale, shift
      (local.set $p (local.get $row))
      (local.set $g (local.get $gain))
      (local.set $b (local.get $bias))
      (local.set $o (i32.add (local.get $out) (i32.sub (local.get $row) (local.get $x))))
      (block $d3 (loop $l3
        (br_if $d3 (i32.ge_u (local.get $p) (local.get $vectorEnd)))
        (v128.store (local.get $o) (f32x4.add
          (f32x4.mul (f32x4.mul (f32x4.sub (v128.load (local.get $p)) (local.get $means)) (local.get $scales))
            (v128.load (local.get $g)))
          (v128.load (local.get $b))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (local.set $g (i32.add (local.get $g) (i32.const 16)))
        (local.set $b (i32.add (local.get $b) (i32.const 16)))
        (local.set $o (i32.add (local.get $o) (i32.const 16)))
        (br $l3)))
      (block $t3 (loop $tail3
        (br_if $t3 (i32.ge_u (local.get $p) (local.get $end)))
        (f32.store (local.get $o) (f32.add
          (f32.mul (f32.mul (f32.sub (f32.load (local.get $p)) (local.get $mean)) (local.get $scale)) (f32.load (local.get $g)))
          (f32.load (local.get $b))))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (local.set $g (i32.add (local.get $g) (i32.const 4)))
        (local.set $b (i32.add (local.get $b) (i32.const 4)))
        (local.set $o (i32.add (local.get $o) (i32.const 4)))
        (br $tail3)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $eachRow))))
;; Causal attention over whole rows (a prefill, a scoring pass or training's forward pass), every row, head and
  ;; position. C = heads·headDim.
  ;;   qkv   [batch·seqLen, 3C]              each position's query | key | value
  ;;   k, v  [batch, heads, seqLen, hd]      out: the keys and values, as the decode loop's cache holds them
  ;;   y     [batch·seqLen, C]               out: softmax(q·kᵀ·scale) over positions 0..t, times v, heads side by side
  ;;   probs [5 × (seqLen rounded up to 4)]  scratch (see $attendOne)
  ;;   pOut  [batch, heads, seqLen, seqLen]  out unless 0: the softmax, row t over columns 0..t and 0 after (training
  ;;                                         keeps it for attendCausalGrad)
  (func (export "attendCausal")
    (param $qkv i32) (param $k i32) (param $v i32) (param $y i32) (param $probs i32) (param $pOut i32)
    (param $batch i32) (param $seqLen i32) (param $heads i32) (param $headDim i32) (param $scale f32)
    (local $c i32) (local $headBytes i32) (local $rowBytes i32) (local $b i32) (local $h i32) (local $t i32)
    (local $keys i32) (local $values i32) (local $q i32) (local $pRow i32) (local $splats i32) (local $l i32)
    (local.set $c (i32.mul (local.get $heads) (local.get $headDim)))
    (local.set $headBytes (i32.shl (local.get $headDim) (i32.const 2)))
    (local.set $rowBytes (i32.mul (local.get $c) (i32.const 12)))
    (local.set $b (i32.const 0))
    (block $batchDone (loop $eachRow
      (br_if $batchDone (i32.ge_u (local.get $b) (local.get $batch)))
      (local.set $h (i32.const 0))
      (block $headsDone (loop $eachHead
        (br_if $headsDone (i32.ge_u (local.get $h) (local.get $heads)))
        (local.set $keys (i32.add (local.get $k) (i32.mul (local.get $headBytes)
          (i32.mul (i32.add (i32.mul (local.get $b) (local.get $heads)) (local.get $h)) (local.get $seqLen)))))
        (local.set $values (i32.add (local.get $v) (i32.sub (local.get $keys) (local.get $k))))
        ;; gather this head's keys and values of every position
        (local.set $t (i32.const 0))
        (block $gathered (loop $gather
          (br_if $gathered (i32.ge_u (local.get $t) (local.get $seqLen)))
          (local.set $q (i32.add (i32.add (local.get $qkv)
            (i32.mul (i32.add (i32.mul (local.get $b) (local.get $seqLen)) (local.get $t)) (local.get $rowBytes)))
            (i32.mul (local.get $h) (local.get $headBytes))))
          (memory.copy (i32.add (local.get $keys) (i32.mul (local.get $t) (local.get $headBytes)))
            (i32.add (local.get $q) (i32.shl (local.get $c) (i32.const 2))) (local.get $headBytes))
          (memory.copy (i32.add (local.get $values) (i32.mul (local.get $t) (local.get $headBytes)))
            (i32.add (local.get $q) (i32.shl (local.get $c) (i32.const 3))) (local.get $headBytes))
          (local.set $t (i32.add (local.get $t) (i32.const 1)))
          (br $gather)))
        ;; each position attends to positions 0..t
        (local.set $t (i32.const 0))
        (block $positionsDone (loop $eachPosition
          (br_if $positionsDone (i32.ge_u (local.get $t) (local.get $seqLen)))
          (local.set $q (i32.add (i32.add (local.get $qkv)
            (i32.mul (i32.add (i32.mul (local.get $b) (local.get $seqLen)) (local.get $t)) (local.get $rowBytes)))
            (i32.mul (local.get $h) (local.get $headBytes))))
          (call $attendOne (local.get $q) (local.get $keys) (local.get $values) (i32.const 0)
            (i32.add (local.get $t) (i32.const 1)) (local.get $headDim) (local.get $scale) (local.get $probs)
            (i32.add (local.get $y) (i32.add
              (i32.mul (i32.add (i32.mul (local.get $b) (local.get $seqLen)) (local.get $t)) (i32.shl (local.get $c) (i32.const 2)))
              (i32.mul (local.get $h) (local.get $headBytes)))))
          ;; the softmax of this position, from $attendOne's splats (after its t + 1 scores, rounded up to 4), then zeros
          (if (local.get $pOut) (then
            (local.set $pRow (i32.add (local.get $pOut) (i32.shl (i32.mul (local.get $seqLen)
              (i32.add (i32.mul (i32.add (i32.mul (local.get $b) (local.get $heads)) (local.get $h)) (local.get $seqLen))
                (local.get $t))) (i32.const 2))))
            (local.set $splats (i32.add (local.get $probs)
              (i32.shl (i32.and (i32.add (local.get $t) (i32.const 4)) (i32.const -4)) (i32.const 2))))
            (local.set $l (i32.const 0))
            (block $copied (loop $copy
              (br_if $copied (i32.gt_u (local.get $l) (local.get $t)))
              (f32.store (i32.add (local.get $pRow) (i32.shl (local.get $l) (i32.const 2)))
                (f32.load (i32.add (local.get $splats) (i32.shl (local.get $l) (i32.const 4)))))
              (local.set $l (i32.add (local.get $l) (i32.const 1)))
              (br $copy)))
            (memory.fill (i32.add (local.get $pRow) (i32.shl (local.get $l) (i32.const 2))) (i32.const 0)
              (i32.shl (i32.sub (local.get $seqLen) (local.get $l)) (i32.const 2)))))
          (local.set $t (i32.add (local.get $t) (i32.const 1)))
          (br $eachPosition)))
        (local.set $h (i32.add (local.get $h) (i32.const 1)))
        (br $eachHead)))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (br $eachRow))))
;; The four lane sums of a0..a3 as one vector: [Σ a0, Σ a1, Σ a2, Σ a3] (a 4×4 transpose by shuffles, then adds).
  (func $sum4x4 (param $a0 v128) (param $a1 v128) (param $a2 v128) (param $a3 v128) (result v128)
    (local $s01 v128) (local $s23 v128)
    ;; (a0₀+a0₂, a1₀+a1₂, a0₁+a0₃, a1₁+a1₃), and the same of a2, a3
    (local.set $s01 (f32x4.add
      (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $a0) (local.get $a1))
      (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $a0) (local.get $a1))))
    (local.set $s23 (f32x4.add
      (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $a2) (local.get $a3))
      (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $a2) (local.get $a3))))
    (f32x4.add
      (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $s01) (local.get $s23))
      (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $s01) (local.get $s23))))

  ;; The gradient of attendCausal (training's backward pass) for every row and head, from what its forward pass kept:
  ;; the queries (qkv), keys and values (k, v as attendCausal wrote them) and the softmax P (its pOut). With s the
  ;; scale and g = dL/dy of one position and head: dP_j = g·v_j and dS_j = P_j·(dP_j − Σ_l P_l·dP_l) over the
  ;; columns j = 0..t of position t: dq = s·Σ_j dS_j·k_j, dk_j += s·dS_j·q and dv_j += P_j·g. The dot products and
  ;; dq's sum run four columns at a time into four independent partial sums. headDim is a multiple of 4.
  ;;   dy      [batch·seqLen, C]    dL/dy
  ;;   dqkv    [batch·seqLen, 3C]   out: dL/dqkv, every value written
  ;;   scratch dP and dS of one position (seqLen rounded up to 4, each), then dk and dv of one head ([seqLen, hd] each)
  (func (export "attendCausalGrad")
    (param $qkv i32) (param $k i32) (param $v i32) (param $p i32) (param $dy i32) (param $dqkv i32) (param $scratch i32)
    (param $batch i32) (param $seqLen i32) (param $heads i32) (param $headDim i32) (param $scale f32)
    (local $c i32) (local $headBytes i32) (local $qkvRowBytes i32) (local $rowBytes i32) (local $squareRow i32)
    (local $b i32) (local $h i32) (local $i i32) (local $j i32) (local $d i32) (local $keys i32) (local $values i32)
    (local $dp i32) (local $ds i32) (local $pHead i32) (local $q i32) (local $g i32) (local $pRow i32) (local $dsRow i32)
    (local $out i32) (local $kp i32) (local $x4 i32) (local $sp i32)
    (local $acc v128) (local $acc1 v128) (local $acc2 v128) (local $acc3 v128) (local $acc4 v128) (local $gv v128)
    (local $sv v128) (local $pv v128) (local $dk i32) (local $dv i32)
    (local $x f32) (local $rowDot f32) (local $headBytes2 i32) (local $headBytes3 i32)
    (local.set $c (i32.mul (local.get $heads) (local.get $headDim)))
    (local.set $headBytes (i32.shl (local.get $headDim) (i32.const 2)))
    (local.set $headBytes2 (i32.shl (local.get $headBytes) (i32.const 1)))
    (local.set $headBytes3 (i32.add (local.get $headBytes2) (local.get $headBytes)))
    (local.set $rowBytes (i32.shl (local.get $c) (i32.const 2)))
    (local.set $qkvRowBytes (i32.mul (local.get $rowBytes) (i32.const 3)))
    (local.set $squareRow (i32.shl (local.get $seqLen) (i32.const 2)))
    (local.set $dp (local.get $scratch))
    (local.set $ds (i32.add (local.get $dp)
      (i32.shl (i32.and (i32.add (local.get $seqLen) (i32.const 3)) (i32.const -4)) (i32.const 2))))
    (local.set $dk (i32.add (local.get $ds) (i32.sub (local.get $ds) (local.get $dp))))
    (local.set $dv (i32.add (local.get $dk) (i32.mul (local.get $seqLen) (local.get $headBytes))))
    (local.set $b (i32.const 0))
    (block $batchDone (loop $eachRow
      (br_if $batchDone (i32.ge_u (local.get $b) (local.get $batch)))
      (local.set $h (i32.const 0))
      (block $headsDone (loop $eachHead
        (br_if $headsDone (i32.ge_u (local.get $h) (local.get $heads)))
        (local.set $keys (i32.add (local.get $k) (i32.mul (local.get $headBytes)
          (i32.mul (i32.add (i32.mul (local.get $b) (local.get $heads)) (local.get $h)) (local.get $seqLen)))))
        (local.set $values (i32.add (local.get $v) (i32.sub (local.get $keys) (local.get $k))))
        (memory.fill (local.get $dk) (i32.const 0) (i32.shl (i32.mul (local.get $seqLen) (local.get $headBytes)) (i32.const 1)))
        (local.set $pHead (i32.add (local.get $p) (i32.mul (local.get $squareRow)
          (i32.mul (i32.add (i32.mul (local.get $b) (local.get $heads)) (local.get $h)) (local.get $seqLen)))))
        ;; position by position: dP, dS and dq
        (local.set $i (i32.const 0))
        (block $positionsDone (loop $eachPosition
          (br_if $positionsDone (i32.ge_u (local.get $i) (local.get $seqLen)))
          (local.set $q (i32.add (i32.add (local.get $qkv)
            (i32.mul (i32.add (i32.mul (local.get $b) (local.get $seqLen)) (local.get $i)) (local.get $qkvRowBytes)))
            (i32.mul (local.get $h) (local.get $headBytes))))
          (local.set $g (i32.add (i32.add (local.get $dy)
            (i32.mul (i32.add (i32.mul (local.get $b) (local.get $seqLen)) (local.get $i)) (local.get $rowBytes)))
            (i32.mul (local.get $h) (local.get $headBytes))))
          (local.set $pRow (i32.add (local.get $pHead) (i32.mul (local.get $i) (local.get $squareRow))))
          (local.set $dsRow (local.get $ds))
          ;; dP_j = g·v_j, and Σ_j P_j·dP_j: four columns at a time (reduced together), then the rest one at a time
          (local.set $acc4 (f32x4.splat (f32.const 0)))
          (local.set $kp (local.get $values))
          (local.set $j (i32.const 0))
          (block $quadsDone (loop $eachQuad
            (br_if $quadsDone (i32.gt_u (i32.add (local.get $j) (i32.const 3)) (local.get $i)))
            (local.set $acc (f32x4.splat (f32.const 0)))
            (local.set $acc1 (local.get $acc))
            (local.set $acc2 (local.get $acc))
            (local.set $acc3 (local.get $acc))
            (local.set $d (i32.const 0))
            (block $quadDotted (loop $quadDot
              (br_if $quadDotted (i32.ge_u (local.get $d) (local.get $headBytes)))
              (local.set $gv (v128.load (i32.add (local.get $g) (local.get $d))))
              (local.set $x4 (i32.add (local.get $kp) (local.get $d)))
              (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (local.get $gv) (v128.load (local.get $x4)))))
              (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (local.get $gv)
                (v128.load (i32.add (local.get $x4) (local.get $headBytes))))))
              (local.set $acc2 (f32x4.add (local.get $acc2) (f32x4.mul (local.get $gv)
                (v128.load (i32.add (local.get $x4) (local.get $headBytes2))))))
              (local.set $acc3 (f32x4.add (local.get $acc3) (f32x4.mul (local.get $gv)
                (v128.load (i32.add (local.get $x4) (local.get $headBytes3))))))
              (local.set $d (i32.add (local.get $d) (i32.const 16)))
              (br $quadDot)))
            (local.set $acc (call $sum4x4 (local.get $acc) (local.get $acc1) (local.get $acc2) (local.get $acc3)))
            (v128.store (i32.add (local.get $dp) (i32.shl (local.get $j) (i32.const 2))) (local.get $acc))
            (local.set $acc4 (f32x4.add (local.get $acc4) (f32x4.mul (local.get $acc)
              (v128.load (i32.add (local.get $pRow) (i32.shl (local.get $j) (i32.const 2)))))))
            (local.set $kp (i32.add (local.get $kp) (i32.shl (local.get $headBytes) (i32.const 2))))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br $eachQuad)))
          (local.set $rowDot (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $acc4)) (f32x4.extract_lane 1 (local.get $acc4)))
            (f32.add (f32x4.extract_lane 2 (local.get $acc4)) (f32x4.extract_lane 3 (local.get $acc4)))))
          (block $dotsDone (loop $eachDot
            (br_if $dotsDone (i32.gt_u (local.get $j) (local.get $i)))
            (local.set $acc (f32x4.splat (f32.const 0)))
            (local.set $d (i32.const 0))
            (block $dotted (loop $dot
              (br_if $dotted (i32.ge_u (local.get $d) (local.get $headBytes)))
              (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul
                (v128.load (i32.add (local.get $g) (local.get $d))) (v128.load (i32.add (local.get $kp) (local.get $d))))))
              (local.set $d (i32.add (local.get $d) (i32.const 16)))
              (br $dot)))
            (local.set $x (f32.add
              (f32.add (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
              (f32.add (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc)))))
            (f32.store (i32.add (local.get $dp) (i32.shl (local.get $j) (i32.const 2))) (local.get $x))
            (local.set $rowDot (f32.add (local.get $rowDot)
              (f32.mul (f32.load (i32.add (local.get $pRow) (i32.shl (local.get $j) (i32.const 2)))) (local.get $x))))
            (local.set $kp (i32.add (local.get $kp) (local.get $headBytes)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $eachDot)))
          ;; dS_j = P_j·(dP_j − Σ_l P_l·dP_l), kept for dq; dk_j += dS_j·q and dv_j += P_j·g, 4 lanes at a time
          (local.set $kp (local.get $dk))
          (local.set $x4 (local.get $dv))
          (local.set $j (i32.const 0))
          (block $accumulated (loop $accumulate
            (br_if $accumulated (i32.gt_u (local.get $j) (local.get $i)))
            (local.set $x (f32.load (i32.add (local.get $pRow) (i32.shl (local.get $j) (i32.const 2)))))
            (local.set $pv (f32x4.splat (local.get $x)))
            (local.set $x (f32.mul (local.get $x)
              (f32.sub (f32.load (i32.add (local.get $dp) (i32.shl (local.get $j) (i32.const 2)))) (local.get $rowDot))))
            (f32.store (i32.add (local.get $dsRow) (i32.shl (local.get $j) (i32.const 2))) (local.get $x))
            (local.set $sv (f32x4.splat (local.get $x)))
            (local.set $d (i32.const 0))
            (block $lanesDone (loop $lanes
              (br_if $lanesDone (i32.ge_u (local.get $d) (local.get $headBytes)))
              (v128.store (i32.add (local.get $kp) (local.get $d)) (f32x4.add
                (v128.load (i32.add (local.get $kp) (local.get $d)))
                (f32x4.mul (local.get $sv) (v128.load (i32.add (local.get $q) (local.get $d))))))
              (v128.store (i32.add (local.get $x4) (local.get $d)) (f32x4.add
                (v128.load (i32.add (local.get $x4) (local.get $d)))
                (f32x4.mul (local.get $pv) (v128.load (i32.add (local.get $g) (local.get $d))))))
              (local.set $d (i32.add (local.get $d) (i32.const 16)))
              (br $lanes)))
            (local.set $kp (i32.add (local.get $kp) (local.get $headBytes)))
            (local.set $x4 (i32.add (local.get $x4) (local.get $headBytes)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $accumulate)))
          ;; dq = s·Σ_j dS_j·k_j, 4 lanes at a time
          (local.set $out (i32.add (local.get $dqkv) (i32.sub (local.get $q) (local.get $qkv))))
          (local.set $d (i32.const 0))
          (block $dqDone (loop $dqLanes
            (br_if $dqDone (i32.ge_u (local.get $d) (local.get $headBytes)))
            (local.set $acc (f32x4.splat (f32.const 0)))
            (local.set $acc1 (local.get $acc))
            (local.set $acc2 (local.get $acc))
            (local.set $acc3 (local.get $acc))
            (local.set $kp (i32.add (local.get $keys) (local.get $d)))
            (local.set $sp (local.get $dsRow))
            (local.set $j (i32.const 0))
            (block $quadsWeighed (loop $weighQuad
              (br_if $quadsWeighed (i32.gt_u (i32.add (local.get $j) (i32.const 3)) (local.get $i)))
              (local.set $acc (f32x4.add (local.get $acc)
                (f32x4.mul (v128.load32_splat (local.get $sp)) (v128.load (local.get $kp)))))
              (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (v128.load32_splat offset=4 (local.get $sp))
                (v128.load (i32.add (local.get $kp) (local.get $headBytes))))))
              (local.set $acc2 (f32x4.add (local.get $acc2) (f32x4.mul (v128.load32_splat offset=8 (local.get $sp))
                (v128.load (i32.add (local.get $kp) (local.get $headBytes2))))))
              (local.set $acc3 (f32x4.add (local.get $acc3) (f32x4.mul (v128.load32_splat offset=12 (local.get $sp))
                (v128.load (i32.add (local.get $kp) (local.get $headBytes3))))))
              (local.set $sp (i32.add (local.get $sp) (i32.const 16)))
              (local.set $kp (i32.add (local.get $kp) (i32.shl (local.get $headBytes) (i32.const 2))))
              (local.set $j (i32.add (local.get $j) (i32.const 4)))
              (br $weighQuad)))
            (block $weighed (loop $weigh
              (br_if $weighed (i32.gt_u (local.get $j) (local.get $i)))
              (local.set $acc (f32x4.add (local.get $acc)
                (f32x4.mul (v128.load32_splat (local.get $sp)) (v128.load (local.get $kp)))))
              (local.set $sp (i32.add (local.get $sp) (i32.const 4)))
              (local.set $kp (i32.add (local.get $kp) (local.get $headBytes)))
              (local.set $j (i32.add (local.get $j) (i32.const 1)))
              (br $weigh)))
            (v128.store (i32.add (local.get $out) (local.get $d)) (f32x4.mul
              (f32x4.add (f32x4.add (local.get $acc) (local.get $acc1)) (f32x4.add (local.get $acc2) (local.get $acc3)))
              (f32x4.splat (local.get $scale))))
            (local.set $d (i32.add (local.get $d) (i32.const 16)))
            (br $dqLanes)))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $eachPosition)))
        ;; this head's s·dk and dv into dqkv, beside each position's dq
        (local.set $i (i32.const 0))
        (local.set $kp (local.get $dk))
        (local.set $x4 (local.get $dv))
        (block $writtenDone (loop $write
          (br_if $writtenDone (i32.ge_u (local.get $i) (local.get $seqLen)))
          (local.set $out (i32.add (i32.add (local.get $dqkv)
            (i32.mul (i32.add (i32.mul (local.get $b) (local.get $seqLen)) (local.get $i)) (local.get $qkvRowBytes)))
            (i32.add (i32.mul (local.get $h) (local.get $headBytes)) (local.get $rowBytes))))
          (local.set $d (i32.const 0))
          (block $rowDone (loop $lanesOut
            (br_if $rowDone (i32.ge_u (local.get $d) (local.get $headBytes)))
            (v128.store (i32.add (local.get $out) (local.get $d))
              (f32x4.mul (v128.load (i32.add (local.get $kp) (local.get $d))) (f32x4.splat (local.get $scale))))
            (v128.store (i32.add (i32.add (local.get $out) (local.get $rowBytes)) (local.get $d))
              (v128.load (i32.add (local.get $x4) (local.get $d))))
            (local.set $d (i32.add (local.get $d) (i32.const 16)))
            (br $lanesOut)))
          (local.set $kp (i32.add (local.get $kp) (local.get $headBytes)))
          (local.set $x4 (i32.add (local.get $x4) (local.get $headBytes)))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $write)))
        (local.set $h (i32.add (local.get $h) (i32.const 1)))
        (br $eachHead)))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (br $eachRow))))

;; Token plus position embedding of each row: out[r] = wte[tokens[r]] + wpe[positions[r]], width floats a row.
  (func (export "embed")
    (param $wte i32) (param $wpe i32) (param $tokens i32) (param $positions i32) (param $out i32) (param $rows i32)
    (param $width i32)
    (local $r i32) (local $rowBytes i32) (local $a i32) (local $b i32) (local $o i32) (local $d i32)
    (local.set $rowBytes (i32.shl (local.get $width) (i32.const 2)))
    (block $done (loop $eachRow
      (br_if $done (i32.ge_u (local.get $r) (local.get $rows)))
      (local.set $a (i32.add (local.get $wte) (i32.mul (local.get $rowBytes)
        (i32.load (i32.add (local.get $tokens) (i32.shl (local.get $r) (i32.const 2)))))))
      (local.set $b (i32.add (local.get $wpe) (i32.mul (local.get $rowBytes)
        (i32.load (i32.add (local.get $positions) (i32.shl (local.get $r) (i32.const 2)))))))
      (local.set $o (i32.add (local.get $out) (i32.mul (local.get $r) (local.get $rowBytes))))
      (local.set $d (i32.const 0))
      (block $rowDone (loop $each
        (br_if $rowDone (i32.ge_u (local.get $d) (local.get $rowBytes)))
        (f32.store (i32.add (local.get $o) (local.get $d)) (f32.add
          (f32.load (i32.add (local.get $a) (local.get $d))) (f32.load (i32.add (local.get $b) (local.get $d)))))
        (local.set $d (i32.add (local.get $d) (i32.const 4)))
        (br $each)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $eachRow))))

  ;; x += delta over n floats (the residual add), in place.
  (func (export "addInPlace") (param $x i32) (param $delta i32) (param $n i32)
    (local $end i32) (local $vectorEnd i32)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $n) (i32.const 2))))
    (local.set $vectorEnd (i32.add (local.get $x) (i32.shl (i32.and (local.get $n) (i32.const -4)) (i32.const 2))))
    (block $done (loop $lanes
      (br_if $done (i32.ge_u (local.get $x) (local.get $vectorEnd)))
      (v128.store (local.get $x) (f32x4.add (v128.load (local.get $x)) (v128.load (local.get $delta))))
      (local.set $x (i32.add (local.get $x) (i32.const 16)))
      (local.set $delta (i32.add (local.get $delta) (i32.const 16)))
      (br $lanes)))
    (block $tailDone (loop $tail
      (br_if $tailDone (i32.ge_u (local.get $x) (local.get $end)))
      (f32.store (local.get $x) (f32.add (f32.load (local.get $x)) (f32.load (local.get $delta))))
      (local.set $x (i32.add (local.get $x) (i32.const 4)))
      (local.set $delta (i32.add (local.get $delta) (i32.const 4)))
      (br $tail))))

  ;; The gradient of `gelu` above from its input x and s = σ(2u) as the forward pass kept them:
  ;; dx = dy·(s + x·s·(1 − s)·(3·cube·x² + linear)), n floats (a multiple of 4) of x, s and dy to dx. No e^x here:
  ;; tfjs's sigmoid (XNNPACK) computes s faster than `gelu`'s exp4 would.
  (func (export "geluGrad") (param $x i32) (param $s i32) (param $dy i32) (param $dx i32) (param $n i32)
    (param $cube f32) (param $linear f32)
    (local $end i32) (local $v v128) (local $sv v128) (local $slope v128)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $n) (i32.const 2))))
    (block $done (loop $lanes
      (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
      (local.set $v (v128.load (local.get $x)))
      (local.set $sv (v128.load (local.get $s)))
      (local.set $slope (f32x4.add
        (f32x4.mul (f32x4.mul (local.get $v) (local.get $v)) (f32x4.splat (f32.mul (local.get $cube) (f32.const 3))))
        (f32x4.splat (local.get $linear))))
      (v128.store (local.get $dx) (f32x4.mul (v128.load (local.get $dy)) (f32x4.add (local.get $sv)
        (f32x4.mul (f32x4.mul (f32x4.mul (local.get $v) (local.get $sv))
          (f32x4.sub (f32x4.splat (f32.const 1)) (local.get $sv))) (local.get $slope)))))
      (local.set $x (i32.add (local.get $x) (i32.const 16)))
      (local.set $s (i32.add (local.get $s) (i32.const 16)))
      (local.set $dy (i32.add (local.get $dy) (i32.const 16)))
      (local.set $dx (i32.add (local.get $dx) (i32.const 16)))
      (br $lanes))))

  ;; Column sums: out[j] = Σ_r x[r·width + j], rows × width floats at x, width floats to out, rows added in order
  ;; 4 columns at a time (the width's remainder, if any, one at a time).
  (func (export "columnSum") (param $x i32) (param $out i32) (param $rows i32) (param $width i32)
    (local $rowBytes i32) (local $vectorBytes i32) (local $r i32) (local $d i32)
    (local.set $rowBytes (i32.shl (local.get $width) (i32.const 2)))
    (local.set $vectorBytes (i32.shl (i32.and (local.get $width) (i32.const -4)) (i32.const 2)))
    (memory.fill (local.get $out) (i32.const 0) (local.get $rowBytes))
    (local.set $r (i32.const 0))
    (block $rowsDone (loop $eachRow
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
      (local.set $d (i32.const 0))
      (block $vectorDone (loop $lanes
        (br_if $vectorDone (i32.ge_u (local.get $d) (local.get $vectorBytes)))
        (v128.store (i32.add (local.get $out) (local.get $d)) (f32x4.add
          (v128.load (i32.add (local.get $out) (local.get $d))) (v128.load (i32.add (local.get $x) (local.get $d)))))
        (local.set $d (i32.add (local.get $d) (i32.const 16)))
        (br $lanes)))
      (block $tailDone (loop $tail
        (br_if $tailDone (i32.ge_u (local.get $d) (local.get $rowBytes)))
        (f32.store (i32.add (local.get $out) (local.get $d)) (f32.add
          (f32.load (i32.add (local.get $out) (local.get $d))) (f32.load (i32.add (local.get $x) (local.get $d)))))
        (local.set $d (i32.add (local.get $d) (i32.const 4)))
        (br $tail)))
      (local.set $x (i32.add (local.get $x) (local.get $rowBytes)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $eachRow))))

  ;; One AdamW update of n floats (a multiple of 4), every product in the order adamw.ts's tfjs ops compute it:
  ;; m' = m·β1 + g·(1−β1); v' = v·β2 + g²·(1−β2); w' = w·decay − ((m'/c1) / (√(v'/c2) + ε))·lr, to outW, outM, outV.
  ;; Returns 1 when every value written is finite, else 0 (x − x is NaN exactly for a NaN or an infinite x).
  (func (export "adamw")
    (param $w i32) (param $g i32) (param $m i32) (param $v i32) (param $outW i32) (param $outM i32) (param $outV i32)
    (param $n i32) (param $beta1 f32) (param $oneMinusBeta1 f32) (param $beta2 f32) (param $oneMinusBeta2 f32)
    (param $c1 f32) (param $c2 f32) (param $eps f32) (param $lr f32) (param $decay f32) (result i32)
    (local $end i32) (local $gv v128) (local $nm v128) (local $nv v128) (local $nw v128) (local $bad v128)
    (local.set $end (i32.add (local.get $w) (i32.shl (local.get $n) (i32.const 2))))
    (block $done (loop $lanes
      (br_if $done (i32.ge_u (local.get $w) (local.get $end)))
      (local.set $gv (v128.load (local.get $g)))
      (local.set $nm (f32x4.add (f32x4.mul (v128.load (local.get $m)) (f32x4.splat (local.get $beta1)))
        (f32x4.mul (local.get $gv) (f32x4.splat (local.get $oneMinusBeta1)))))
      (local.set $nv (f32x4.add (f32x4.mul (v128.load (local.get $v)) (f32x4.splat (local.get $beta2)))
        (f32x4.mul (f32x4.mul (local.get $gv) (local.get $gv)) (f32x4.splat (local.get $oneMinusBeta2)))))
      (local.set $nw (f32x4.sub (f32x4.mul (v128.load (local.get $w)) (f32x4.splat (local.get $decay)))
        (f32x4.mul (f32x4.div (f32x4.div (local.get $nm) (f32x4.splat (local.get $c1)))
          (f32x4.add (f32x4.sqrt (f32x4.div (local.get $nv) (f32x4.splat (local.get $c2)))) (f32x4.splat (local.get $eps))))
          (f32x4.splat (local.get $lr)))))
      (v128.store (local.get $outM) (local.get $nm))
      (v128.store (local.get $outV) (local.get $nv))
      (v128.store (local.get $outW) (local.get $nw))
      (local.set $nm (f32x4.add (f32x4.add (f32x4.sub (local.get $nm) (local.get $nm))
        (f32x4.sub (local.get $nv) (local.get $nv))) (f32x4.sub (local.get $nw) (local.get $nw))))
      (local.set $bad (v128.or (local.get $bad) (f32x4.ne (local.get $nm) (local.get $nm))))
      (local.set $w (i32.add (local.get $w) (i32.const 16)))
      (local.set $g (i32.add (local.get $g) (i32.const 16)))
      (local.set $m (i32.add (local.get $m) (i32.const 16)))
      (local.set $v (i32.add (local.get $v) (i32.const 16)))
      (local.set $outW (i32.add (local.get $outW) (i32.const 16)))
      (local.set $outM (i32.add (local.get $outM) (i32.const 16)))
      (local.set $outV (i32.add (local.get $outV) (i32.const 16)))
      (br $lanes)))
    (i32.eqz (v128.any_true (local.get $bad))))

  ;; e^x of n floats from x to out (tfjs's `Exp`, run by wasm-exp.ts), 4 lanes at a time through $exp4 and the
  ;; remainder one lane at a time through the same polynomial. Unlike $exp4 alone, lanes above ln(FLT_MAX) give +∞
  ;; (as expf does) instead of the largest float.
  (func (export "exp") (param $x i32) (param $out i32) (param $n i32)
    (local $end i32) (local $vectorEnd i32) (local $v v128)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $n) (i32.const 2))))
    (local.set $vectorEnd (i32.add (local.get $x) (i32.shl (i32.and (local.get $n) (i32.const -4)) (i32.const 2))))
    (block $done (loop $lanes
      (br_if $done (i32.ge_u (local.get $x) (local.get $vectorEnd)))
      (v128.store (local.get $out) (call $expOrInf (v128.load (local.get $x))))
      (local.set $x (i32.add (local.get $x) (i32.const 16)))
      (local.set $out (i32.add (local.get $out) (i32.const 16)))
      (br $lanes)))
    (block $tailDone (loop $tail
      (br_if $tailDone (i32.ge_u (local.get $x) (local.get $end)))
      (f32.store (local.get $out) (f32x4.extract_lane 0 (call $expOrInf (f32x4.splat (f32.load (local.get $x))))))
      (local.set $x (i32.add (local.get $x) (i32.const 4)))
      (local.set $out (i32.add (local.get $out) (i32.const 4)))
      (br $tail))))

  ;; $exp4, with +∞ for lanes above ln(FLT_MAX) = 88.7228.
  (func $expOrInf (param $x v128) (result v128)
    (v128.bitselect (f32x4.splat (f32.const inf)) (call $exp4 (local.get $x))
      (f32x4.gt (local.get $x) (f32x4.splat (f32.const 88.72284)))))
)
