package dev.tandem.cli;

import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** A TCP port option: 0 to 65535, refused while the command line is read, before anything starts. */
final class PortConverter implements ITypeConverter<Integer> {
  @Override
  public Integer convert(String value) {
    int port;
    try {
      port = Integer.parseInt(value.strip());
    } catch (NumberFormatException e) {
      throw new TypeConversionException("'" + value + "' is not a port number");
    }
    if (port < 0 || port > 65535) {
      throw new TypeConversionException("a port is 0 to 65535, was " + port);
    }
    return port;
  }
}
