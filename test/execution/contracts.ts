// Solidity sources used by the execution tests and the benchmark (compiled at test time by solc-js).

export const TOKEN_SOL = `
// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract Token {
    mapping(address => uint256) public balanceOf;
    uint256 public totalSupply;
    event Transfer(address indexed from, address indexed to, uint256 value);

    constructor(uint256 supply) {
        balanceOf[msg.sender] = supply;
        totalSupply = supply;
        emit Transfer(address(0), msg.sender, supply);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        require(balanceOf[msg.sender] >= value, "insufficient token balance");
        balanceOf[msg.sender] -= value;
        balanceOf[to] += value;
        emit Transfer(msg.sender, to, value);
        return true;
    }
}
`;

export const LAB_SOL = `
// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract Child {
    uint256 public x;
    constructor(uint256 _x) payable { x = _x; }
    function get() external view returns (uint256) { return x; }
    function set(uint256 v) external { x = v; }
}

error Custom(uint256 code);

contract Lab {
    uint256 public counter;
    event Deployed(address indexed addr, bytes32 salt);
    event Counted(uint256 indexed value, address by);

    function deploy(bytes32 salt, uint256 x) external returns (address a) {
        a = address(new Child{salt: salt}(x));
        emit Deployed(a, salt);
    }

    function predict(bytes32 salt, uint256 x) external view returns (address) {
        bytes32 h = keccak256(abi.encodePacked(bytes1(0xff), address(this), salt,
            keccak256(abi.encodePacked(type(Child).creationCode, abi.encode(x)))));
        return address(uint160(uint256(h)));
    }

    function readChild(address c) external view returns (uint256) { return Child(c).get(); }

    function setChild(address c, uint256 v) external { Child(c).set(v); counter += 1; emit Counted(counter, msg.sender); }

    function fail(uint256 code) external pure {
        if (code == 1) revert("custom reason");
        if (code == 2) assert(false);
        if (code == 3) revert Custom(7);
        if (code == 4) { uint256 z = 0; uint256 y = 1 / z; z = y; }
    }

    function bump() external { counter += 1; emit Counted(counter, msg.sender); }

    function burnGas(uint256 n) external { for (uint256 i = 0; i < n; i++) { counter += i; } }

    function sha(bytes calldata d) external pure returns (bytes32) { return sha256(d); }

    function ripemd(bytes calldata d) external pure returns (bytes20) { return ripemd160(d); }

    function recover(bytes32 h, uint8 v, bytes32 r, bytes32 s) external pure returns (address) {
        return ecrecover(h, v, r, s);
    }

    function identity(bytes calldata d) external view returns (bytes memory) {
        (bool ok, bytes memory out) = address(4).staticcall(d);
        require(ok, "identity failed");
        return out;
    }

    function modexp(uint256 b, uint256 e, uint256 m) external view returns (uint256 r) {
        (bool ok, bytes memory out) = address(5).staticcall(abi.encode(uint256(32), uint256(32), uint256(32), b, e, m));
        require(ok, "modexp failed");
        r = abi.decode(out, (uint256));
    }

    function ecAdd(uint256 x1, uint256 y1, uint256 x2, uint256 y2) external view returns (uint256, uint256) {
        (bool ok, bytes memory out) = address(6).staticcall(abi.encode(x1, y1, x2, y2));
        require(ok, "ecadd failed");
        return abi.decode(out, (uint256, uint256));
    }

    function blockInfo() external view returns (uint256 number, uint256 time, address coinbase, uint256 basefee, uint256 chainid, uint256 gaslimit, uint256 prevrandao) {
        return (block.number, block.timestamp, block.coinbase, block.basefee, block.chainid, block.gaslimit, block.prevrandao);
    }

    function hashOf(uint256 n) external view returns (bytes32) { return blockhash(n); }

    function selfBalance() external view returns (uint256) { return address(this).balance; }

    receive() external payable {}
}

contract Destroyer {
    constructor() payable {}
    function destroy(address payable to) external { selfdestruct(to); }
}

contract BurnOnCreate {
    constructor() payable { selfdestruct(payable(address(this))); }
}
`;
