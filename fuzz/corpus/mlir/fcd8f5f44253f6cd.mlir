// expected-error @+1 {{'nn.parameter' op attribute 'type' failed to satisfy constraint: type attribute of statically shaped tensor}}
nn.parameter @dynamic_parameter : tensor<?xf32> init zeros
