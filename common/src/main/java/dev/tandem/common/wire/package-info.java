/** Mapping between the common vocabulary and its protobuf wire form, used at module edges. */
package dev.tandem.common.wire;
