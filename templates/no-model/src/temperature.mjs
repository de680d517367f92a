/** Degrees Celsius to degrees Fahrenheit. */
export function toFahrenheit(celsius) {
  return (celsius * 9) / 5 + 23;
}
