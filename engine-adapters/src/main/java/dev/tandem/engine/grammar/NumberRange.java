package dev.tandem.engine.grammar;

import java.math.BigDecimal;

/**
 * What a JSON number node accepts: integer or not, multiples of a {@code unit} or any value, and an
 * optional range with exclusive ends; and whether a number written so far ({@link Digits}) can
 * still end inside it. Exact (decimal arithmetic), so the matcher never walks into a number it
 * cannot finish.
 *
 * @param unit values are whole multiples of it (positive; an integer is a multiple of 1, and of a
 *     schema's {@code multipleOf} too), or null for any value
 */
record NumberRange(boolean integer, BigDecimal unit, BigDecimal min, boolean minExclusive, BigDecimal max,
    boolean maxExclusive) {
  /** Digits allowed before the point, and after it. */
  static final int MAX_DIGITS = 15;

  static final NumberRange ANY_NUMBER = new NumberRange(false, null, null, false, null, false);

  /**
   * The range of a schema's number or integer, its values multiples of {@code multipleOf} (null:
   * any). An integer multiple of {@code p/q} (in lowest terms) is a multiple of {@code p}.
   */
  static NumberRange of(boolean integer, BigDecimal multipleOf, BigDecimal min, boolean minExclusive, BigDecimal max,
      boolean maxExclusive) {
    BigDecimal unit = multipleOf == null ? null : multipleOf.stripTrailingZeros();
    if (integer) {
      unit = unit == null ? BigDecimal.ONE : integerMultiple(unit);
    }
    return new NumberRange(integer, unit, min, minExclusive, max, maxExclusive);
  }

  /** The least positive integer that is a whole multiple of {@code x} (positive). */
  private static BigDecimal integerMultiple(BigDecimal x) {
    if (x.scale() <= 0) {
      return x;
    }
    java.math.BigInteger numerator = x.unscaledValue();
    java.math.BigInteger denominator = java.math.BigInteger.TEN.pow(x.scale());
    return new BigDecimal(numerator.divide(numerator.gcd(denominator)));
  }

  /** Whether some number written so far may have no completion inside: a range, or multiples of other than 1. */
  boolean bounded() {
    return min != null || max != null || (unit != null && unit.compareTo(BigDecimal.ONE) != 0);
  }

  /**
   * A number as written so far. Phases: 0 nothing, 1 after '-', 2 a leading 0, 3 integer digits,
   * 4 after '.', 5 fraction digits.
   */
  record Digits(boolean negative, int phase, long intValue, int intDigits, long fraction, int fractionDigits) {
    static final Digits START = new Digits(false, 0, 0, 0, 0, 0);

    /** The next state after byte {@code b}, or null if no number continues with it. */
    Digits next(int b, boolean integer) {
      boolean digit = b >= '0' && b <= '9';
      int d = b - '0';
      return switch (phase) {
        case 0 -> b == '-' ? new Digits(true, 1, 0, 0, 0, 0) : b == '0' ? new Digits(false, 2, 0, 1, 0, 0)
            : digit ? new Digits(false, 3, d, 1, 0, 0) : null;
        case 1 -> b == '0' ? new Digits(true, 2, 0, 1, 0, 0) : digit ? new Digits(true, 3, d, 1, 0, 0) : null;
        case 2 -> b == '.' && !integer ? new Digits(negative, 4, 0, 1, 0, 0) : null;
        case 3 -> digit && intDigits < MAX_DIGITS ? new Digits(negative, 3, intValue * 10 + d, intDigits + 1, 0, 0)
            : b == '.' && !integer ? new Digits(negative, 4, intValue, intDigits, 0, 0) : null;
        case 4 -> digit ? new Digits(negative, 5, intValue, intDigits, d, 1) : null;
        case 5 -> digit && fractionDigits < MAX_DIGITS
            ? new Digits(negative, 5, intValue, intDigits, fraction * 10 + d, fractionDigits + 1) : null;
        default -> null;
      };
    }

    boolean complete() {
      return phase == 2 || phase == 3 || phase == 5;
    }

    BigDecimal value() {
      BigDecimal v = BigDecimal.valueOf(intValue);
      if (fractionDigits > 0) {
        v = v.add(BigDecimal.valueOf(fraction, fractionDigits));
      }
      return negative ? v.negate() : v;
    }
  }

  /** True if some number of at most {@link #MAX_DIGITS} digits before the point is in range. */
  boolean satisfiable() {
    BigDecimal big = BigDecimal.TEN.pow(MAX_DIGITS);
    return !bounded() || reachable(false, BigDecimal.ZERO, big) || reachable(true, BigDecimal.ZERO, big);
  }

  /** True if {@code x} is in range (and a multiple of the unit where there is one). */
  boolean contains(BigDecimal x) {
    if (unit != null && x.remainder(unit).signum() != 0) {
      return false;
    }
    if (min != null && (minExclusive ? x.compareTo(min) <= 0 : x.compareTo(min) < 0)) {
      return false;
    }
    return max == null || (maxExclusive ? x.compareTo(max) < 0 : x.compareTo(max) <= 0);
  }

  /** True if the number so far is complete and in range. */
  boolean accepts(Digits n) {
    return n.complete() && contains(n.value());
  }

  /** True if some completion of the number so far is in range. */
  boolean alive(Digits n) {
    if (!bounded()) {
      return true;
    }
    if (n.complete() && contains(n.value())) {
      return true;
    }
    BigDecimal whole = BigDecimal.valueOf(n.intValue);
    switch (n.phase) {
      case 0:
        return true; // checked at compile time: the range holds a number
      case 1: // any magnitude follows
        return reachable(n.negative, BigDecimal.ZERO, null);
      case 2:
      case 4: // 0.xxx or v.xxx
        return !integer && reachable(n.negative, whole, whole.add(BigDecimal.ONE));
      case 3: {
        if (!integer && reachable(n.negative, whole, whole.add(BigDecimal.ONE))) {
          return true;
        }
        BigDecimal scale = BigDecimal.ONE;
        for (int more = 1; n.intDigits + more <= MAX_DIGITS; more++) {
          scale = scale.scaleByPowerOfTen(1);
          if (reachable(n.negative, whole.multiply(scale), whole.add(BigDecimal.ONE).multiply(scale))) {
            return true;
          }
        }
        return false;
      }
      case 5: {
        if (n.fractionDigits >= MAX_DIGITS) {
          return false;
        }
        BigDecimal low = n.value().abs();
        return reachable(n.negative, low, low.add(BigDecimal.ONE.movePointLeft(n.fractionDigits)));
      }
      default:
        return false;
    }
  }

  /**
   * True if a number of magnitude in [lo, hi) (hi null: unbounded), with the given sign, lies in
   * range; where there is a unit, a multiple of it (counted in units: the first and last multiple
   * in both intervals).
   */
  private boolean reachable(boolean negative, BigDecimal lo, BigDecimal hi) {
    // The values: [lo, hi) for positive, (-hi, -lo] for negative.
    BigDecimal a = negative ? (hi == null ? null : hi.negate()) : lo;
    boolean aClosed = !negative;
    BigDecimal b = negative ? lo.negate() : hi;
    boolean bClosed = negative;
    if (unit != null) {
      BigDecimal first = a == null ? null : (aClosed ? units(a, true) : units(a, false).add(BigDecimal.ONE));
      BigDecimal last = b == null ? null : (bClosed ? units(b, false) : units(b, true).subtract(BigDecimal.ONE));
      if (min != null) {
        BigDecimal m = minExclusive ? units(min, false).add(BigDecimal.ONE) : units(min, true);
        first = first == null || m.compareTo(first) > 0 ? m : first;
      }
      if (max != null) {
        BigDecimal m = maxExclusive ? units(max, true).subtract(BigDecimal.ONE) : units(max, false);
        last = last == null || m.compareTo(last) < 0 ? m : last;
      }
      return first == null || last == null || first.compareTo(last) <= 0;
    }
    BigDecimal lowest = a;
    boolean lowClosed = aClosed;
    if (min != null) {
      int c = lowest == null ? 1 : min.compareTo(lowest);
      if (c > 0) {
        lowest = min;
        lowClosed = !minExclusive;
      } else if (c == 0) {
        lowClosed = lowClosed && !minExclusive;
      }
    }
    BigDecimal highest = b;
    boolean highClosed = bClosed;
    if (max != null) {
      int c = highest == null ? -1 : max.compareTo(highest);
      if (c < 0) {
        highest = max;
        highClosed = !maxExclusive;
      } else if (c == 0) {
        highClosed = highClosed && !maxExclusive;
      }
    }
    if (lowest == null || highest == null) {
      return true;
    }
    int c = lowest.compareTo(highest);
    return c < 0 || (c == 0 && lowClosed && highClosed);
  }

  /** {@code x} in units, rounded up (toward the larger count) or down; exact. */
  private BigDecimal units(BigDecimal x, boolean up) {
    BigDecimal[] qr = x.divideAndRemainder(unit);
    int r = qr[1].signum();
    return up && r > 0 ? qr[0].add(BigDecimal.ONE) : !up && r < 0 ? qr[0].subtract(BigDecimal.ONE) : qr[0];
  }
}
